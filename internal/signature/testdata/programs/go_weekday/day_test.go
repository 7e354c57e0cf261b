package weekday

import "testing"

func TestName(t *testing.T) {
	if Name(1) != "monday" {
		t.Fail()
	}
}
