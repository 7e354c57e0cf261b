package hits

import "testing"

func TestHit(t *testing.T) {
	var c Counter
	if c.Hit("/a") != 1 {
		t.Fail()
	}
}
