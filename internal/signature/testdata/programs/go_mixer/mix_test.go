package mixer

import "testing"

func TestBlend(t *testing.T) {
	if Blend(1, 0.5) != 1.5 {
		t.Fail()
	}
}
