package finder

import "testing"

func TestIndexOf(t *testing.T) {
	if IndexOf([]string{"a", "b"}, "b") != 1 {
		t.Fail()
	}
}
