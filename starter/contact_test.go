package starter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/taskclient"
)

// gone is a call that got no answer, as the task client reports it.
var gone = fmt.Errorf("query: %w", taskclient.ErrUnreachable)

func TestEndedWithout(t *testing.T) {
	k := &contact{addr: "127.0.0.1:7233", id: "task-1"}
	live := context.Background()
	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		runErr error
		want   error
		text   string
	}{
		{"Ctrl-C while the result's wait ends", interrupted, fmt.Errorf("wait: %w: %w", taskclient.ErrUnreachable, context.Canceled), nil, "stopped following task task-1"},
		{"server gone", live, gone, errUnavailable, "lost contact with Temporal at 127.0.0.1:7233"},
		{"workflow failed", live, &taskclient.FailedError{Message: "no luck"}, errTaskFailed, ""},
		{"workflow failed as Ctrl-C came", interrupted, &taskclient.FailedError{Message: "no luck"}, errTaskFailed, ""},
	}
	for _, tt := range tests {
		err := endedWithout(tt.ctx, k, tt.runErr)
		if err == nil {
			t.Fatalf("%s: nil error", tt.name)
		}
		if tt.want != nil && !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: %v, want %v with %q", tt.name, err, tt.want, tt.text)
		}
		if tt.want != errTaskFailed && errors.Is(err, errTaskFailed) {
			t.Errorf("%s: reported as task failed: %v", tt.name, err)
		}
	}
}

func TestUntilAnswerRetriesWithinTheLimit(t *testing.T) {
	ctx := context.Background()
	calls := 0
	err := untilAnswer(ctx, time.Minute, func() error {
		calls++
		if calls < 3 {
			return gone
		}
		return &taskclient.FailedError{Message: "no luck"}
	}, nil)
	var ended *taskclient.FailedError
	if !errors.As(err, &ended) || calls != 3 {
		t.Fatalf("after %d calls: %v, want the workflow's end on the third", calls, err)
	}

	calls = 0
	if err := untilAnswer(ctx, 0, func() error { calls++; return gone }, nil); err != gone || calls != 2 {
		t.Fatalf("with no time to retry: %v after %d calls, want %v after 2", err, calls, gone)
	}
}
