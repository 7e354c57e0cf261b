package shapes

import "testing"

func TestArea(t *testing.T) {
	if Area(1) < 3 {
		t.Fatal("too small")
	}
}
