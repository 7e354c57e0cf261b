package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/autocoder/autocoder/workflows"
)

const (
	// callTimeout bounds one status query, so that a server that stopped
	// answering is noticed instead of waited for.
	callTimeout   = 3 * time.Second
	healthTimeout = 3 * time.Second
	maxBackoff    = 5 * time.Second
)

// contact tracks whether the Temporal server answers a client that follows
// a task. Losing it is not the task failing: the client says so once,
// keeps trying, and gives up with errUnavailable after a bounded wait.
type contact struct {
	w      io.Writer
	before func() // readies w for a line (ends a redrawn status line)
	addr   string
	id     string
	limit  time.Duration
	lostAt time.Time
}

func newContact(f *factory, id string, before func()) *contact {
	return &contact{w: f.stderr, before: before, addr: f.cfg.TemporalAddress, id: id,
		limit: durationFromEnv(envContactTimeout, defaultContactTimeout)}
}

// check is called after a failed call: it asks the server for its health
// and returns nil while the failure was something else or the wait is
// still bounded, and the lost-contact error once the wait is over.
func (k *contact) check(ctx context.Context, c client.Client) error {
	hctx, cancel := context.WithTimeout(ctx, healthTimeout)
	_, err := c.CheckHealth(hctx, &client.CheckHealthRequest{})
	cancel()
	if err == nil || ctx.Err() != nil {
		k.ok()
		return nil
	}
	if k.lostAt.IsZero() {
		k.lostAt = time.Now()
		k.before()
		fmt.Fprintf(k.w, "lost contact with Temporal at %s; retrying for up to %s (the task goes on)\n", k.addr, k.limit)
	}
	if time.Since(k.lostAt) >= k.limit {
		return fmt.Errorf("%w: lost contact with Temporal at %s; the task may still be running: autocoder resume %s",
			errUnavailable, k.addr, k.id)
	}
	return nil
}

// ok records an answer from the server.
func (k *contact) ok() {
	if !k.lostAt.IsZero() {
		k.lostAt = time.Time{}
		k.before()
		fmt.Fprintf(k.w, "contact with Temporal at %s restored\n", k.addr)
	}
}

// awaitResult waits for the task's result. Calls that fail because the
// server cannot be reached are retried with backoff until ctx ends: only
// the workflow's own end, or its absence, is an answer.
func awaitResult(ctx context.Context, c client.Client, id string, result *workflows.TaskResult) error {
	backoff := 200 * time.Millisecond
	for {
		err := c.GetWorkflow(ctx, id, "").Get(ctx, result)
		if err == nil || ctx.Err() != nil || !cannotReach(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// cannotReach tells a failed call to the server from an answer: a workflow
// that ended badly, or one that does not exist, is an answer.
func cannotReach(err error) bool {
	var ended *temporal.WorkflowExecutionError
	var notFound *serviceerror.NotFound
	if errors.As(err, &ended) || errors.As(err, &notFound) {
		return false
	}
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}

// queryStatusBounded is queryStatus with a time limit per call.
func queryStatusBounded(ctx context.Context, c client.Client, id string) (workflows.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return queryStatus(ctx, c, id)
}

// queryStatusPatiently queries a task's status, retrying with backoff
// while the server cannot be reached, up to the lost-contact limit.
func queryStatusPatiently(ctx context.Context, f *factory, c client.Client, id string) (workflows.Status, error) {
	k := newContact(f, id, func() {})
	backoff := 200 * time.Millisecond
	for {
		st, err := queryStatusBounded(ctx, c, id)
		if err == nil || ctx.Err() != nil || !cannotReach(err) {
			return st, err
		}
		if lost := k.check(ctx, c); lost != nil {
			return st, lost
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// stoppedFollowing is what Ctrl-C on a following client returns: the task
// goes on in the server.
func stoppedFollowing(id string, cause error) error {
	return fmt.Errorf("stopped following task %s; it goes on. Re-attach: autocoder resume %s; stop it: autocoder cancel %s (%w)",
		id, id, id, cause)
}
