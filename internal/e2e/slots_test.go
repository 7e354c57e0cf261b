package e2e

import (
	"context"
	"fmt"
	"strings"
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
	sb, st, c := services(ctx, t, sandbox.Config{Slots: 1})

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

	// Watch the tasks' pending sandbox runs until all tasks close.
	maxStarted, sawWaiting := 0, false
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
		maxStarted = max(maxStarted, started)
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
	if maxStarted != 1 {
		t.Errorf("at most %d sandbox runs were started at once, want 1 (the worker's one slot)", maxStarted)
	}
	if !sawWaiting {
		t.Error("never saw a sandbox run waiting in Temporal while another ran")
	}
}
