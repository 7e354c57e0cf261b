package logline

import "testing"

func TestLine(t *testing.T) {
	if Line("ann", 2) == "" {
		t.Fail()
	}
}
