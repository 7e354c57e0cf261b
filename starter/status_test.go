package starter

import (
	"testing"
	"time"
)

func TestModelCallDescribed(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		call modelCall
		want string
	}{
		{modelCall{Attempt: 2, MaxAttempts: 6, Since: now.Add(-130*time.Second - 300*time.Millisecond)},
			"waiting for the model for 2m10s (attempt 2 of 6)"},
		{modelCall{Attempt: 1, Since: now.Add(time.Second)}, "waiting for the model for 0s (attempt 1)"},
		{modelCall{Attempt: 3, MaxAttempts: 6, RetryAt: now.Add(4 * time.Second),
			LastFailure: "model provider openai sent nothing for 2m0s\x1b]52;c;aGk=\x07"},
			"the model call failed: model provider openai sent nothing for 2m0s\\x1b]52;c;aGk=\\x07; retrying in 4s (attempt 3 of 6)"},
		{modelCall{Attempt: 2, MaxAttempts: 6, RetryAt: now.Add(-time.Second)}, "the model call failed; retrying in 0s (attempt 2 of 6)"},
	} {
		if got := describeCall(&tc.call, now); got != tc.want {
			t.Errorf("describe(%+v)\n got %q\nwant %q", tc.call, got, tc.want)
		}
	}
}
