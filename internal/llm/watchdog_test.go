package llm

import (
	"context"
	"errors"
	"testing"
	"time"
)

// answeringWatchdog is a watchdog whose provider has begun to answer.
func answeringWatchdog(t *testing.T) (*watchdog, context.Context) {
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	w := startWatchdog(Limits{FirstByte: time.Hour, Idle: time.Hour}, cancel)
	t.Cleanup(w.stop)
	w.progress()
	return w, ctx
}

// A timer that expired just before progress reset it calls fire late: the
// bytes that arrived in between must win, not a stall.
func TestWatchdogFireAfterProgressRearms(t *testing.T) {
	w, ctx := answeringWatchdog(t)
	w.fire() // the late call of a timer that had already expired
	if err := w.stall(); err != nil {
		t.Fatalf("stall recorded after progress: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("request cancelled after progress: %v", context.Cause(ctx))
	}
}

func TestWatchdogFiresAtDeadline(t *testing.T) {
	w, ctx := answeringWatchdog(t)
	w.mu.Lock()
	w.deadline = time.Now().Add(-time.Millisecond)
	w.mu.Unlock()
	w.fire()
	var stall *StallError
	if !errors.As(w.stall(), &stall) || !stall.Started {
		t.Fatalf("stall = %v, want a stall after the answer began", w.stall())
	}
	if !errors.As(context.Cause(ctx), &stall) {
		t.Fatalf("request not cancelled with the stall: %v", context.Cause(ctx))
	}
}
