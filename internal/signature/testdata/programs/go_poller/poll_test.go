package poller

import "testing"

func TestWaitReady(t *testing.T) {
	if WaitReady(func() bool { return false }) == 0 {
		t.Fail()
	}
}
