package ids

import "testing"

func TestKey(t *testing.T) {
	if Key("user-", 7) != "user-7" {
		t.Fail()
	}
}
