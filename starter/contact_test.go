package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The ways calls fail while the server goes down or away: none of them is
// an answer about the task.
var goneErrors = map[string]error{
	"unavailable":          status.Error(codes.Unavailable, "connection refused"),
	"deadline":             context.DeadlineExceeded,
	"cancelled stream":     status.Error(codes.Canceled, "grpc: the client connection is closing"),
	"transport is closing": status.Error(codes.Unknown, "transport is closing"),
	"internal":             status.Error(codes.Internal, "stream terminated by RST_STREAM"),
	"resource exhausted":   serviceerror.NewResourceExhausted(0, "busy"),
	"refused":              fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}),
	"reset":                fmt.Errorf("read: %w", syscall.ECONNRESET),
	"eof":                  io.ErrUnexpectedEOF,
}

func TestCannotReach(t *testing.T) {
	for name, err := range goneErrors {
		if !cannotReach(err) {
			t.Errorf("%s: cannotReach(%v) = false, want true", name, err)
		}
	}
	answers := map[string]error{
		"workflow failed": fmt.Errorf("get result: %w", &temporal.WorkflowExecutionError{}),
		"not found":       serviceerror.NewNotFound("workflow not found"),
		"query failed":    serviceerror.NewQueryFailed("no such query"),
	}
	for name, err := range answers {
		if cannotReach(err) {
			t.Errorf("%s: cannotReach(%v) = true, want false", name, err)
		}
	}
}

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
		{"Ctrl-C while the result's wait ends", interrupted, context.Canceled, nil, "stopped following task task-1"},
		{"server gone", live, goneErrors["transport is closing"], errUnavailable, "lost contact with Temporal at 127.0.0.1:7233"},
		{"workflow failed", live, &temporal.WorkflowExecutionError{}, errTaskFailed, ""},
		{"workflow failed as Ctrl-C came", interrupted, &temporal.WorkflowExecutionError{}, errTaskFailed, ""},
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
			return goneErrors["cancelled stream"]
		}
		return &temporal.WorkflowExecutionError{}
	}, nil)
	var ended *temporal.WorkflowExecutionError
	if !errors.As(err, &ended) || calls != 3 {
		t.Fatalf("after %d calls: %v, want the workflow's end on the third", calls, err)
	}

	calls = 0
	gone := goneErrors["internal"]
	if err := untilAnswer(ctx, 0, func() error { calls++; return gone }, nil); err != gone || calls != 2 {
		t.Fatalf("with no time to retry: %v after %d calls, want %v after 2", err, calls, gone)
	}
}
