package chaos

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/worker"
)

// TestKilledWorkersActivitiesRetryAtOnce kills a worker during a model
// call that would take a minute and starts another on the same data dir:
// the new worker fails the dead one's activity at once, so its retry
// carries the WorkerLost failure rather than a heartbeat timeout, and
// the task completes.
func TestKilledWorkersActivitiesRetryAtOnce(t *testing.T) {
	requireDocker(t)
	bin := testenv.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	script := taskScript(false, delays{})
	var plans atomic.Int32
	model := newModelServer(t, func(req llmtest.ChatRequest) llmtest.Reply {
		r := script(req)
		if strings.Contains(req.LastUser(), planMarker) && plans.Add(1) == 1 {
			r.Delay = time.Minute // the first plan call is cut by the kill
		}
		return r
	})
	workers := testenv.NewFleet(t, bin, workerEnv(ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), t.TempDir(), model.URL()),
		"--sandbox-slots", "1", "--sandbox-pool", "1")
	first := workers.Start()
	id, err := startTask(ctx, c, "lost", 1, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	for plans.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the plan call never reached the model")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	restart := workers.Start().Started
	if _, err := waitDone(ctx, c, id); err != nil {
		t.Fatal(err)
	}

	events, err := tasks(c).History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	planScheduled := int64(0)
	for _, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == "Plan" {
			planScheduled = ev.GetEventId()
		}
		a := ev.GetActivityTaskStartedEventAttributes()
		if a == nil || a.GetScheduledEventId() != planScheduled {
			continue
		}
		if a.GetAttempt() != 2 {
			t.Fatalf("Plan completed on attempt %d, want 2 (one cut by the kill)", a.GetAttempt())
		}
		if got := a.GetLastFailure().GetApplicationFailureInfo().GetType(); got != worker.ErrTypeWorkerLost {
			t.Fatalf("Plan's retry followed %q (%s), want %s from the restarted worker", got, a.GetLastFailure().GetMessage(), worker.ErrTypeWorkerLost)
		}
		t.Logf("Plan's retry started %s after the restart (the heartbeat timeout alone is 5 s, then 1 s to the retry)",
			ev.GetEventTime().AsTime().Sub(restart).Round(time.Millisecond))
		return
	}
	t.Fatal("no completed Plan in the history")
}
