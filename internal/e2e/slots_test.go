package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
	"github.com/autocoder/autocoder/workflows"
)

// TestSandboxRunsWaitInTemporal: a worker with one sandbox slot takes one
// sandbox run at a time; the other tasks' runs wait in Temporal, scheduled
// and not started, where any worker with a free slot could take them.
func TestSandboxRunsWaitInTemporal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	real, st, c := services(ctx, t, sandbox.Config{Slots: 1})
	sb := &countingRunner{Runner: real}

	sc := pythonScenario
	passing := strings.Replace(sc.buggy, "a - b", "a + b", 1) // code and tests, passing
	model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if strings.Contains(req.LastUser(), planMarker) {
			return llmtest.Reply{Content: sc.plan}
		}
		return llmtest.Reply{Content: passing}
	})
	acts := &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(llm.Env{OpenAIKey: "k", OpenAIBaseURL: model.URL()})}
	w := worker.New(c, acts, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const tasks = 3
	tc := taskClient(c)
	var runs []taskclient.Started
	for i := range tasks {
		run, err := tc.Start(ctx, workflows.TaskInput{Task: fmt.Sprintf("%s (copy %d)", sc.task, i), Language: "python", Model: "openai:gpt-4.1-mini"},
			taskclient.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
	}

	// Watch the tasks' pending sandbox runs until all tasks close. The
	// descriptions are read one after another, so a run that ends between
	// two of them and the next that starts may both read as started: the
	// runner counts the runs truly at once.
	sawWaiting := false
	for {
		open, started, waiting := 0, 0, 0
		for _, run := range runs {
			d, err := tc.Describe(ctx, run.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				open++
			}
			for _, pa := range d.GetPendingActivities() {
				if pa.GetActivityType().GetName() != "Check" {
					continue
				}
				if pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED {
					started++
				} else {
					waiting++
				}
			}
		}
		sawWaiting = sawWaiting || (started == 1 && waiting > 0)
		if open == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, run := range runs {
		res, err := tc.Wait(ctx, run.ID)
		if err != nil {
			t.Fatalf("task %s: %v", run.ID, err)
		}
		if res.Iterations != 1 {
			t.Errorf("task %s took %d iterations, want 1", run.ID, res.Iterations)
		}
	}
	if n := sb.max.Load(); n != 1 {
		t.Errorf("at most %d sandbox runs ran at once, want 1 (the worker's one slot)", n)
	}
	if !sawWaiting {
		t.Error("never saw a sandbox run waiting in Temporal while another ran")
	}
}

// countingRunner counts the runs of its Runner under way at once.
type countingRunner struct {
	sandbox.Runner
	now, max atomic.Int64
}

func (r *countingRunner) Run(ctx context.Context, spec sandbox.Spec) (sandbox.Result, error) {
	n := r.now.Add(1)
	defer r.now.Add(-1)
	for m := r.max.Load(); n > m && !r.max.CompareAndSwap(m, n); m = r.max.Load() {
	}
	return r.Runner.Run(ctx, spec)
}
