package clamp

import "testing"

func TestClampHigh(t *testing.T) {
	if got := Clamp(15, 0, 10); got != 10 {
		t.Fatalf("Clamp(15, 0, 10) = %d; want 10", got)
	}
}
