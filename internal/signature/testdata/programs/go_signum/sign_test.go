package signum

import "testing"

func TestSign(t *testing.T) {
	if Sign(-4) != -1 {
		t.Fail()
	}
}
