package invoice

import "testing"

func TestTotal(t *testing.T) {
	if Total(1234) == "" {
		t.Fail()
	}
}
