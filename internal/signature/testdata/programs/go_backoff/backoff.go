package backoff

import "time"

func Delay(attempt int) time.Duration {
	base := 100 * time.Millisecond
	return base * attempt
}
