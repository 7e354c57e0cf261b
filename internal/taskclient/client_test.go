package taskclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/workflows"
)

// echoTask stands in for CodingTask on the wire: it takes the same input,
// answers the same query and update, and writes each signal it gets into
// its status's feedback, so a test sees exactly what the client sent. A
// cancel ends it with a failure, a reject with reason "done" ends it well.
// A task with a history limit continues as new once, without it.
func echoTask(ctx workflow.Context, in workflows.TaskInput) (workflows.TaskResult, error) {
	if in.HistoryLimit > 0 {
		in.HistoryLimit = 0
		return workflows.TaskResult{}, workflow.NewContinueAsNewError(ctx, workflows.WorkflowName, in)
	}
	st := workflows.Status{Task: in.Task, Language: in.Language, Phase: workflows.PhaseWaiting,
		Transcripts: []workflows.TranscriptRef{{ID: "tr-" + in.Task, Step: 1}}}
	if err := workflow.SetQueryHandler(ctx, workflows.QueryStatus, func() (workflows.Status, error) { return st, nil }); err != nil {
		return workflows.TaskResult{}, err
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, workflows.UpdateRollback,
		func(ctx workflow.Context, r workflows.RollbackRequest) (workflows.Status, error) {
			st.Feedback = append(st.Feedback, fmt.Sprintf("rollback %+v", r))
			return st, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, r workflows.RollbackRequest) error {
			if r.Checkpoint != 1 {
				return temporal.NewApplicationError(fmt.Sprintf("unknown checkpoint %d", r.Checkpoint), "rollback")
			}
			return nil
		}})
	if err != nil {
		return workflows.TaskResult{}, err
	}
	sel := workflow.NewSelector(ctx)
	var end error
	done := false
	for _, name := range []string{workflows.SignalApprove, workflows.SignalReject, workflows.SignalFeedback, workflows.SignalCancel} {
		ch := workflow.GetSignalChannel(ctx, name)
		sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) {
			var payload map[string]any
			c.Receive(ctx, &payload)
			b, _ := json.Marshal(payload)
			st.Feedback = append(st.Feedback, name+" "+string(b))
			switch {
			case name == workflows.SignalCancel:
				done, end = true, temporal.NewApplicationError("cancelled: "+fmt.Sprint(payload["reason"]), "cancel")
			case name == workflows.SignalReject && payload["reason"] == "done":
				done = true
			}
		})
	}
	for !done {
		sel.Select(ctx)
	}
	st.Phase = workflows.PhaseSucceeded
	return workflows.TaskResult{Iterations: len(st.Feedback), Status: st}, end
}

func newTestClient(t *testing.T) *Client {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	ts.NewWorker(workflows.TaskQueue, func(r worker.Registry) {
		r.RegisterWorkflowWithOptions(echoTask, workflow.RegisterOptions{Name: workflows.WorkflowName})
	})
	return New(ts.GetDefaultClient(), ts.GetDefaultNamespace())
}

func TestIDForNamesTheTask(t *testing.T) {
	for _, tc := range []struct{ task, prefix string }{
		{"Fix the rounding in app/models.py total()", "autocoder-fix-the-rounding-in-app-models-"},
		{"Write a function add(a, b) in calc.py that returns the sum", "autocoder-write-a-function-add-a-b-in-calc-"},
		{"  --  ", "autocoder-"},
		{"Überprüfe die Größe", "autocoder-berpr-fe-die-gr-e-"},
		{strings.Repeat("x", 50) + " more", "autocoder-" + strings.Repeat("x", 32) + "-"},
		{"", "autocoder-"},
	} {
		id := IDFor(tc.task)
		if !strings.HasPrefix(id, tc.prefix) || len(id) != len(tc.prefix)+10 {
			t.Errorf("IDFor(%q) = %q, want %q and a 10-digit suffix", tc.task, id, tc.prefix)
		}
	}
	if a, b := IDFor("same task"), IDFor("same task"); a == b {
		t.Errorf("two ids for one task text are both %q", a)
	}
}

func TestClientSpeaksTheWorkflowsNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newTestClient(t)

	run, err := c.Start(ctx, workflows.TaskInput{Task: "a", Language: "go", Model: "openai:m"}, StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(run.ID, "autocoder-a-") || len(run.ID) != len("autocoder-a-")+10 || run.RunID == "" {
		t.Errorf("started %+v, want an id of the task's words and a run id", run)
	}
	id := run.ID
	sends := []func() error{
		func() error { return c.Approve(ctx, id, workflows.ApproveSignal{Comment: "ok"}) },
		func() error { return c.Feedback(ctx, id, workflows.FeedbackSignal{Text: "more"}) },
		func() error {
			return c.Answer(ctx, id, workflows.Answer{Words: []string{"y"}, Signal: workflows.SignalApprove}, "y")
		},
		func() error {
			return c.Answer(ctx, id, workflows.Answer{Signal: workflows.SignalReject}, "use argparse")
		},
		func() error { return c.Answer(ctx, id, workflows.Answer{Signal: workflows.SignalFeedback}, "go on") },
	}
	for i, send := range sends {
		if err := send(); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := c.Answer(ctx, id, workflows.Answer{Signal: "dance"}, ""); err == nil {
		t.Error("an answer with an unknown signal was sent")
	}
	// Signals are handled one per selection; the update could overtake
	// the last ones, so it waits until all five are in.
	for {
		st, err := c.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Feedback) >= len(sends) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, err := c.Rollback(ctx, id, workflows.RollbackRequest{Checkpoint: 1, Feedback: "again"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`approve {"comment":"ok"}`, `feedback {"text":"more"}`, `approve {}`,
		`reject {"reason":"use argparse"}`, `feedback {"text":"go on"}`, `rollback {Checkpoint:1 Feedback:again}`,
	}
	// Signals on different channels that arrive in one workflow task are
	// taken in the selector's order, not the order sent: compare as sets.
	got := slices.Clone(st.Feedback)
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the task got\n%q\nwant\n%q", st.Feedback, want)
	}
	_, err = c.Rollback(ctx, id, workflows.RollbackRequest{Checkpoint: 9})
	var rejected *RejectedError
	if !errors.As(err, &rejected) || rejected.Message != "unknown checkpoint 9" || rejected.Error() != "rollback task "+id+": unknown checkpoint 9" {
		t.Errorf("rollback to 9: %v, want a *RejectedError naming the checkpoint", err)
	}

	if err := c.Reject(ctx, id, workflows.RejectSignal{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, id)
	if err != nil || res.Status.Phase != workflows.PhaseSucceeded {
		t.Errorf("wait: %+v, %v", res, err)
	}

	failing, err := c.Start(ctx, workflows.TaskInput{Task: "b", Language: "python"}, StartOptions{ID: "task-b"})
	if err != nil || failing.ID != "task-b" {
		t.Fatalf("start task-b: %+v, %v", failing, err)
	}
	if err := c.Cancel(ctx, "task-b", workflows.CancelSignal{Reason: "enough"}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Wait(ctx, "task-b")
	var failed *FailedError
	if !errors.As(err, &failed) || failed.Message != "cancelled: enough" {
		t.Errorf("wait for a failed task: %v, want a *FailedError with the workflow's message", err)
	}

	for name, call := range map[string]func() error{
		"status":   func() error { _, err := c.Status(ctx, "nope"); return err },
		"approve":  func() error { return c.Approve(ctx, "nope", workflows.ApproveSignal{}) },
		"cancel":   func() error { return c.CancelNow(ctx, "nope") },
		"rollback": func() error { _, err := c.Rollback(ctx, "nope", workflows.RollbackRequest{Checkpoint: 1}); return err },
		"wait":     func() error { _, err := c.Wait(ctx, "nope"); return err },
	} {
		if err := call(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s on an unknown task: %v, want ErrNotFound", name, err)
		}
	}
}

// TestRunHistoriesFollowTheChain: a task that continued as new has a
// history for each run, first to last; History is the last one's.
func TestRunHistoriesFollowTheChain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newTestClient(t)
	started, err := c.Start(ctx, workflows.TaskInput{Task: "hop", HistoryLimit: 1}, StartOptions{ID: "hop"})
	if err != nil {
		t.Fatal(err)
	}
	// The first run answers no query; the second ends on the reject.
	for _, err := c.Status(ctx, "hop"); err != nil; _, err = c.Status(ctx, "hop") {
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Reject(ctx, "hop", workflows.RejectSignal{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, "hop"); err != nil {
		t.Fatal(err)
	}
	runs, err := c.RunHistories(ctx, "hop")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	first, last := runs[0], runs[1]
	if first[0].GetWorkflowExecutionStartedEventAttributes().GetOriginalExecutionRunId() != started.RunID ||
		first[len(first)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW {
		t.Errorf("the first run is not the started one that continued as new: %v", first)
	}
	if last[len(last)-1].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED {
		t.Errorf("the last run did not complete: %v", last)
	}
	current, err := c.History(ctx, "hop")
	if err != nil || len(current) != len(last) {
		t.Errorf("History has %d events (%v), the last run %d", len(current), err, len(last))
	}
	if _, err := c.RunHistories(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("histories of an unknown task: %v, want ErrNotFound", err)
	}
}

// TestListReadsTheMemo: a row carries the task text, model and language
// from the list call, without asking each task.
func TestListReadsTheMemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newTestClient(t)
	for _, task := range []string{"first", "second"} {
		if _, err := c.Start(ctx, workflows.TaskInput{Task: task, Language: "go", Model: "openai:m"}, StartOptions{ID: task}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Reject(ctx, "first", workflows.RejectSignal{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	var rows []Task
	for ctx.Err() == nil { // visibility catches up with the close
		var err error
		if rows, err = c.List(ctx, ListOptions{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		if len(rows) == 2 && rows[1].Status == "completed" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(rows) != 2 {
		t.Fatalf("listed %+v, want two tasks", rows)
	}
	for _, r := range rows {
		if r.Task != r.ID || r.Model != "openai:m" || r.Language != "go" || r.Started.IsZero() {
			t.Errorf("row %+v lacks what Start put in the memo", r)
		}
	}
	if rows[1].Closed.IsZero() || !rows[0].Closed.IsZero() {
		t.Errorf("closed times: %v and %v, want the first task's only", rows[1].Closed, rows[0].Closed)
	}
	running, err := c.List(ctx, ListOptions{Status: "running", Limit: 10})
	if err != nil || len(running) != 1 || running[0].ID != "second" {
		t.Errorf("running tasks: %+v, %v", running, err)
	}
	if one, err := c.List(ctx, ListOptions{Limit: 1}); err != nil || len(one) != 1 {
		t.Errorf("limit 1: %+v, %v", one, err)
	}
}

// TestProjectDirReadsTheMemo: the project a task was started on comes back
// from the server, for resume to write to; a task without one has none,
// and an unknown task is not found.
func TestProjectDirReadsTheMemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newTestClient(t)
	for id, dir := range map[string]string{"with": "/home/me/project", "without": ""} {
		if _, err := c.Start(ctx, workflows.TaskInput{Task: id}, StartOptions{ID: id, Dir: dir}); err != nil {
			t.Fatal(err)
		}
		if got, err := c.ProjectDir(ctx, id); err != nil || got != dir {
			t.Errorf("ProjectDir(%s) = %q, %v; want %q", id, got, err, dir)
		}
	}
	if _, err := c.ProjectDir(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("ProjectDir of an unknown task: %v, want ErrNotFound", err)
	}
}

// TestTranscriptReadsTheStatusThenTheStore: conversations come in the
// order the status names them, each message as the loop stored it.
func TestTranscriptReadsTheStatusThenTheStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := newTestClient(t)
	st, err := store.OpenSQLite(ctx, t.TempDir()+"/autocoder.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msgs := []llm.Message{
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "read", Arguments: `{"path":"a.py"}`}}},
		{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "1", Name: "read", Content: "x = 1"}},
	}
	var entries [][]byte
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		entries = append(entries, b)
	}
	if _, err := st.AppendEntries(ctx, "tr-t", 0, entries); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Start(ctx, workflows.TaskInput{Task: "t"}, StartOptions{ID: "t"}); err != nil {
		t.Fatal(err)
	}
	convs, err := c.Transcript(ctx, "t", st)
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) != 1 || convs[0].ID != "tr-t" || convs[0].Step != 1 || !reflect.DeepEqual(convs[0].Messages, msgs) {
		t.Errorf("conversations %+v", convs)
	}
	if _, err := c.Transcript(ctx, "nope", st); !errors.Is(err, ErrNotFound) {
		t.Errorf("transcript of an unknown task: %v", err)
	}
}
