package tail

import "testing"

func TestLast(t *testing.T) {
	if Last([]string{"a", "b", "c", "d"}) != "d" {
		t.Fail()
	}
}
