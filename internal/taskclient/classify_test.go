package taskclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

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

func TestClassify(t *testing.T) {
	for name, err := range goneErrors {
		if got := classify(err); !errors.Is(got, ErrUnreachable) || got.Error() != err.Error() {
			t.Errorf("%s: classify(%v) = %v, want ErrUnreachable with the same message", name, err, got)
		}
	}
	answers := map[string]error{
		"workflow failed": fmt.Errorf("get result: %w", &temporal.WorkflowExecutionError{}),
		"not found":       serviceerror.NewNotFound("workflow not found"),
		"query failed":    serviceerror.NewQueryFailed("no such query"),
	}
	for name, err := range answers {
		if errors.Is(classify(err), ErrUnreachable) {
			t.Errorf("%s: classify(%v) is ErrUnreachable", name, err)
		}
	}
	if err := classify(serviceerror.NewNotFound("workflow not found")); !errors.Is(err, ErrNotFound) {
		t.Errorf("not found: %v is not ErrNotFound", err)
	}
	var failed *FailedError
	if err := classify(answers["workflow failed"]); !errors.As(err, &failed) {
		t.Errorf("workflow failed: %v is not a *FailedError", err)
	}
}
