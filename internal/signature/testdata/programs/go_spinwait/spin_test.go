package spinwait

import "testing"

func TestConverge(t *testing.T) {
	if Converge(9) != 0 {
		t.Fail()
	}
}
