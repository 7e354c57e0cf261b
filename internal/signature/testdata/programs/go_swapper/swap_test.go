package swapper

import "testing"

func TestSwap(t *testing.T) {
	if a, b := Swap(1, 2); a != 2 || b != 1 {
		t.Fail()
	}
}
