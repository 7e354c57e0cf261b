package poller

func WaitReady(ready func() bool) int {
	n := 0
	for !ready() {
		n++
	}
	return n
}
