package backoff

import "testing"

func TestDelay(t *testing.T) {
	if Delay(2) == 0 {
		t.Fail()
	}
}
