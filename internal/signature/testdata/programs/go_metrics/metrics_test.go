package metrics

import "testing"

func ratio(a, b int) float64 { return float64(a) / float64(b) }

func TestRatio(t *testing.T) {
	if r := ratio(1, 4); r != 0.25 {
		t.Errorf("ratio = %d, want 0.25", r)
	}
}
