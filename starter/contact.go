package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/autocoder/autocoder/internal/taskclient"
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

func newContact(f *Factory, id string, before func()) *contact {
	return &contact{w: f.IO.ErrOut, before: before, addr: f.cfg.TemporalAddress, id: id,
		limit: f.cfg.settings.Duration("client.contact_timeout")}
}

// healthChecker asks the server whether it serves.
type healthChecker interface {
	Reachable(ctx context.Context) error
}

// check is called after a call failed with cause: it asks the server for
// its health and returns nil while the server answers or the wait is
// still bounded, and the lost-contact error once the wait is over.
func (k *contact) check(ctx context.Context, c healthChecker, cause error) error {
	hctx, cancel := context.WithTimeout(ctx, healthTimeout)
	err := c.Reachable(hctx)
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
		return k.lost(cause)
	}
	return nil
}

// lost is the error of a client that gave up following: the task may
// well go on.
func (k *contact) lost(cause error) error {
	return fmt.Errorf("%w: lost contact with Temporal at %s; the task may still be running: autocoder resume %s (last error: %v)",
		errUnavailable, k.addr, k.id, cause)
}

// ok records an answer from the server.
func (k *contact) ok() {
	if !k.lostAt.IsZero() {
		k.lostAt = time.Time{}
		k.before()
		fmt.Fprintf(k.w, "contact with Temporal at %s restored\n", k.addr)
	}
}

// awaitResult waits for the task's result. Calls that get no answer are
// retried with backoff until ctx ends or they have failed for limit: only
// the workflow's own end, or its absence, is an answer.
func awaitResult(ctx context.Context, c TaskClient, id string, result *workflows.TaskResult, limit time.Duration) error {
	return untilAnswer(ctx, limit, func() (err error) {
		*result, err = c.Wait(ctx, id)
		return err
	}, nil)
}

// untilAnswer calls call until it succeeds or gets an answer (see
// cannotReach), with backoff, while ctx lasts and for at most limit of
// failing calls; it then returns call's last error. failed, when set,
// hears of each failure and may end the wait with its own error.
func untilAnswer(ctx context.Context, limit time.Duration, call func() error, failed func(error) error) error {
	backoff := 200 * time.Millisecond
	var failing time.Time // since the first failure: a long poll may wait for hours before it
	for {
		err := call()
		if err == nil || ctx.Err() != nil || !cannotReach(err) {
			return err
		}
		if failing.IsZero() {
			failing = time.Now()
		} else if time.Since(failing) >= limit {
			return err
		}
		if failed != nil {
			if ferr := failed(err); ferr != nil {
				return ferr
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// cannotReach tells a failed call to the server from the task's answer
// (see taskclient.ErrUnreachable).
func cannotReach(err error) bool { return errors.Is(err, taskclient.ErrUnreachable) }

// queryStatusBounded is a status query with a time limit per call.
func queryStatusBounded(ctx context.Context, c TaskClient, id string) (workflows.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return c.Status(ctx, id)
}

// queryStatusPatiently queries a task's status, retrying with backoff
// while the server cannot be reached, up to the lost-contact limit.
func queryStatusPatiently(ctx context.Context, f *Factory, c TaskClient, id string) (workflows.Status, error) {
	k := newContact(f, id, func() {})
	var st workflows.Status
	err := untilAnswer(ctx, k.limit, func() (err error) {
		st, err = queryStatusBounded(ctx, c, id)
		return err
	}, func(err error) error { return k.check(ctx, c, err) })
	return st, err
}

// stoppedFollowing is what Ctrl-C on a following client returns: the task
// goes on in the server.
func stoppedFollowing(id string, cause error) error {
	return &quietCause{
		msg:   fmt.Sprintf("stopped following task %s; it goes on. Re-attach: autocoder resume %s; stop it: autocoder cancel %s", id, id, id),
		cause: cause,
	}
}

// quietCause is an error whose message is complete for a person: its
// cause (an interrupt's "context canceled", say) is kept for errors.Is and
// left out of the text.
type quietCause struct {
	msg   string
	cause error
}

func (e *quietCause) Error() string { return e.msg }
func (e *quietCause) Unwrap() error { return e.cause }
