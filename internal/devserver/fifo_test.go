package devserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const (
	fifoWorkflowQueue = "fifo-workflows"
	fifoActivityQueue = "fifo-runs"
)

func fifoWorkflow(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              fifoActivityQueue,
		ScheduleToCloseTimeout: 5 * time.Minute,
	})
	return workflow.ExecuteActivity(ctx, "FifoRun", n).Get(ctx, nil)
}

// TestQueuedRunsStartInArrivalOrder: activities waiting on a queue with
// two slots start in the order they were scheduled, across workflows (a
// fairness check: 20 runs queued on 2 slots, reporting the largest
// overtaking).
func TestQueuedRunsStartInArrivalOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{DataDir: t.TempDir(), UIPort: NoUI, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	c := dial(t, srv)

	ww := worker.New(c, fifoWorkflowQueue, worker.Options{})
	ww.RegisterWorkflow(fifoWorkflow)
	if err := ww.Start(); err != nil {
		t.Fatal(err)
	}
	defer ww.Stop()
	const n = 20
	runs := make([]client.WorkflowRun, n)
	for i := range n {
		if runs[i], err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprint("fifo-", i), TaskQueue: fifoWorkflowQueue}, fifoWorkflow, i); err != nil {
			t.Fatal(err)
		}
		// Runs scheduled within the same instant may reach the queue in
		// either order; tasks arrive further apart than that.
		time.Sleep(20 * time.Millisecond)
	}
	// Arrival order: when each workflow's activity was scheduled.
	scheduled := make([]time.Time, n)
	for i := range n {
		for scheduled[i].IsZero() {
			d, err := c.DescribeWorkflowExecution(ctx, runs[i].GetID(), "")
			if err != nil {
				t.Fatal(err)
			}
			if pa := d.GetPendingActivities(); len(pa) == 1 {
				scheduled[i] = pa[0].GetScheduledTime().AsTime()
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	arrival := make([]int, n)
	for i := range arrival {
		arrival[i] = i
	}
	slices.SortStableFunc(arrival, func(a, b int) int { return scheduled[a].Compare(scheduled[b]) })

	var mu sync.Mutex
	var started []int
	aw := worker.New(c, fifoActivityQueue, worker.Options{MaxConcurrentActivityExecutionSize: 2})
	aw.RegisterActivityWithOptions(func(ctx context.Context, i int) error {
		mu.Lock()
		started = append(started, i)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		return nil
	}, activity.RegisterOptions{Name: "FifoRun"})
	if err := aw.Start(); err != nil {
		t.Fatal(err)
	}
	defer aw.Stop()
	for _, r := range runs {
		if err := r.Get(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Overtaking: how many runs that arrived clearly earlier a run started
	// ahead of. Two slots poll at once, so two neighbours may swap; runs
	// scheduled within a few milliseconds of each other may reach the
	// queue in either order (the history service hands each to matching on
	// its own), so they do not count as arriving earlier.
	const tie = 15 * time.Millisecond
	worst := 0
	for pos, i := range started {
		ahead := 0
		for _, j := range started[pos+1:] {
			if scheduled[j].Add(tie).Before(scheduled[i]) {
				ahead++
			}
		}
		worst = max(worst, ahead)
	}
	t.Logf("arrival %v, started %v, largest overtaking %d", arrival, started, worst)
	if worst > 1 {
		t.Errorf("a run started %d places ahead of its arrival (arrival %v, started %v)", worst, arrival, started)
	}
}
