package quota

import "testing"

func TestAllowed(t *testing.T) {
	if !Allowed(3, Limits{Max: 5}) {
		t.Fail()
	}
}
