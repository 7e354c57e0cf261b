package starter

import (
	"context"
	"testing"
	"time"
)

// TestExitAfterInterrupt: a command stuck in a call that ignores its
// context still ends after the grace period once a signal came, and a
// second signal is left to its default action (stop was called).
func TestExitAfterInterrupt(t *testing.T) {
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	stopped := make(chan struct{})
	codes := make(chan int, 1)
	go exitAfterInterrupt(ctx, func() { close(stopped) }, 50*time.Millisecond, func(code int) { codes <- code })

	select {
	case code := <-codes:
		t.Fatalf("exited with %d before any signal", code)
	case <-time.After(200 * time.Millisecond):
	}
	interrupt()
	select {
	case code := <-codes:
		if code != exitInterrupted {
			t.Errorf("exit code %d, want %d", code, exitInterrupted)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit 10s after the signal")
	}
	select {
	case <-stopped:
	default:
		t.Error("signal handling was not given back before the grace period")
	}
}
