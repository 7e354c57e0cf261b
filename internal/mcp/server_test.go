package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/workflows"
)

// fakeTasks answers the tools from a script of statuses: each Status call
// takes the next one, the last one repeating. It records what was sent.
type fakeTasks struct {
	mu       sync.Mutex
	statuses []workflows.Status
	convs    []taskclient.Conversation
	sent     []string
	started  []StartArgs
}

func (f *fakeTasks) Start(_ context.Context, a StartArgs) (Started, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, a)
	return Started{ID: "autocoder-t1", Notes: "language: Python (\x1b[31mdetected\x1b[0m)"}, nil
}

func (f *fakeTasks) Status(_ context.Context, id string) (workflows.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id != "autocoder-t1" {
		return workflows.Status{}, fmt.Errorf("query: %w", taskclient.ErrNotFound)
	}
	st := f.statuses[0]
	if len(f.statuses) > 1 {
		f.statuses = f.statuses[1:]
	}
	return st, nil
}

func (f *fakeTasks) List(context.Context, taskclient.ListOptions) ([]taskclient.Task, error) {
	return []taskclient.Task{{ID: "autocoder-t1", Status: "running", Task: "add \x1b]0;pwned\x07numbers"}}, nil
}

func (f *fakeTasks) Transcript(context.Context, string) ([]taskclient.Conversation, error) {
	return f.convs, nil
}

func (f *fakeTasks) record(s string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, s)
	return nil
}

func (f *fakeTasks) Approve(_ context.Context, id string, s workflows.ApproveSignal) error {
	return f.record("approve " + id)
}
func (f *fakeTasks) Reject(_ context.Context, id string, s workflows.RejectSignal) error {
	return f.record("reject " + id + ": " + s.Reason)
}
func (f *fakeTasks) Feedback(_ context.Context, id string, s workflows.FeedbackSignal) error {
	return f.record("feedback " + id + ": " + s.Text)
}
func (f *fakeTasks) Answer(_ context.Context, id string, a workflows.Answer, text string) error {
	return f.record(a.Signal + " " + id)
}
func (f *fakeTasks) Cancel(_ context.Context, id string, s workflows.CancelSignal) error {
	return f.record("cancel " + id)
}
func (f *fakeTasks) CancelNow(_ context.Context, id string) error {
	return f.record("cancel now " + id)
}
func (f *fakeTasks) Rollback(_ context.Context, id string, r workflows.RollbackRequest) (workflows.Status, error) {
	return workflows.Status{}, &taskclient.RejectedError{Op: "rollback", Message: "the task has checkpoints 1 to 2"}
}
func (f *fakeTasks) Patch(context.Context, string, int) (Patch, error) {
	return Patch{Checkpoint: 2, Diff: "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-a - b\n+a + b\x1b[2J\n"}, nil
}
func (f *fakeTasks) WriteFiles(context.Context, string, int, string) (int, error) {
	return 0, f.record("write")
}

// textView renders statuses plainly.
type textView struct{}

func (textView) Status(id string, st workflows.Status) string {
	return fmt.Sprintf("task: %s\nphase: %s", id, st.Phase)
}
func (textView) Place(st workflows.Status) string {
	return fmt.Sprintf("[%s] step %d turn %d: %s", st.Phase, st.Step, st.Turn, st.Doing)
}
func (textView) Progress(st workflows.Status) float64 { return float64(st.Step) / 4 }
func (textView) Message(m llm.Message) string         { return string(m.Role) + ": " + m.Text }

// connect serves tasks in memory and returns a client session, with the
// progress notifications it receives.
func connect(t *testing.T, tasks *fakeTasks) (*sdk.ClientSession, *notes) {
	t.Helper()
	return connectWith(t, tasks, &sdk.ClientOptions{})
}

func connectWith(t *testing.T, tasks *fakeTasks, opts *sdk.ClientOptions) (*sdk.ClientSession, *notes) {
	t.Helper()
	ctx := context.Background()
	srv := New(Options{Tasks: tasks, View: textView{}, Poll: time.Millisecond})
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	got := &notes{}
	opts.ProgressNotificationHandler = func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		got.add(r.Params)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, got
}

type notes struct {
	mu  sync.Mutex
	all []*sdk.ProgressNotificationParams
}

func (n *notes) add(p *sdk.ProgressNotificationParams) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.all = append(n.all, p)
}

func (n *notes) get() []*sdk.ProgressNotificationParams {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.all)
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	p.SetProgressToken("tok")
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: protocol error %v (want a tool result)", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.(*sdk.TextContent).Text)
	}
	return b.String(), res.IsError
}

func TestToolsAndTheirSchemas(t *testing.T) {
	cs, _ := connect(t, &fakeTasks{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{toolAnswer, toolApprove, toolCancel, toolPatch, toolList, toolReject, toolRollback, toolFeedback, toolStart, toolStatus, toolTranscript, toolWait}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 40 {
			t.Errorf("%s: description %q is too short to use without a manual", tool.Name, tool.Description)
		}
		raw, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatalf("%s: schema %s: %v", tool.Name, raw, err)
		}
		for name, prop := range schema.Properties {
			if !strings.Contains(string(prop), `"description"`) {
				t.Errorf("%s: argument %s has no description: %s", tool.Name, name, prop)
			}
		}
		if _, takesID := schema.Properties["id"]; takesID != slices.Contains(schema.Required, "id") {
			t.Errorf("%s: id is a property %v but required %v", tool.Name, takesID, schema.Required)
		}
		if tool.Name == toolStart {
			if !slices.Equal(schema.Required, []string{"task"}) {
				t.Errorf("start_task requires %v, want only task", schema.Required)
			}
			for _, arg := range []string{"dir", "test_cmd", "language", "max_iterations", "budget_usd", "approve_plan", "approve_commands", "wait"} {
				if _, ok := schema.Properties[arg]; !ok {
					t.Errorf("start_task has no %s argument", arg)
				}
			}
		}
	}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func TestBadArgumentsAreToolErrors(t *testing.T) {
	cs, _ := connect(t, &fakeTasks{statuses: []workflows.Status{{Phase: workflows.PhaseGenerating}}})
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{toolStatus, map[string]any{}, `missing properties: ["id"]`},
		{toolStatus, map[string]any{"id": " "}, "id is empty"},
		{toolStatus, map[string]any{"id": 5}, "id"},
		{toolStatus, map[string]any{"id": "autocoder-nope"}, "no task autocoder-nope here; list_tasks shows"},
		{toolStart, map[string]any{"task": "  "}, "task is empty"},
		{toolStart, map[string]any{"task": "x", "dir": "proj"}, "not an absolute path"},
		{toolStart, map[string]any{"task": "x", "wait": true, "max_wait_seconds": -1}, "max_wait_seconds -1 is negative"},
		{toolList, map[string]any{"status": "sleeping"}, `status "sleeping" is not a task state`},
		{toolReject, map[string]any{"id": "autocoder-t1"}, "reason"},
		{toolAnswer, map[string]any{"id": "autocoder-t1", "reply": "yes"}, "asks nothing now"},
		{toolRollback, map[string]any{"id": "autocoder-t1", "checkpoint": 0}, "give a checkpoint number from 1"},
		{toolRollback, map[string]any{"id": "autocoder-t1", "checkpoint": 7}, "the task has checkpoints 1 to 2"},
		{toolPatch, map[string]any{"id": "autocoder-t1", "write_to": "out"}, "write_to \"out\" is not an absolute path"},
		{toolTranscript, map[string]any{"id": "autocoder-t1", "offset": -1}, "must not be negative"},
	} {
		out, isErr := callTool(t, cs, tc.tool, tc.args)
		if !isErr || !strings.Contains(out, tc.want) {
			t.Errorf("%s %v: isError %v, %q; want an error saying %q", tc.tool, tc.args, isErr, out, tc.want)
		}
	}
}

func TestWaitReportsProgressAndStopsAtAQuestion(t *testing.T) {
	gate := &workflows.Approval{Kind: workflows.GatePlan, Question: "Approve the plan?", Details: "1. add\x1b[31m numbers",
		Deadline: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		Answers: []workflows.Answer{
			{Words: []string{"yes", "y"}, Signal: workflows.SignalApprove, Means: "approve the plan"},
			{Words: []string{"no"}, Signal: workflows.SignalReject, Means: "reject it"},
			{Signal: workflows.SignalFeedback, Means: "other text is guidance"},
		}}
	tasks := &fakeTasks{statuses: []workflows.Status{
		{Phase: workflows.PhasePlanning},
		{Phase: workflows.PhasePlanning},
		{Phase: workflows.PhaseGenerating, Step: 1, Turn: 1, Doing: "read calc.py"},
		{Phase: workflows.PhaseGenerating, Step: 1, Turn: 2, Doing: "edit calc.py"},
		{Phase: workflows.PhaseGenerating, Step: 0, Turn: 2, Doing: "rolled back"}, // progress goes back
		{Phase: workflows.PhaseWaiting, Step: 1, Pending: gate},
	}}
	cs, got := connect(t, tasks)
	out, isErr := callTool(t, cs, toolStart, map[string]any{"task": "add numbers", "wait": true})
	if isErr {
		t.Fatalf("start_task failed: %s", out)
	}
	for _, want := range []string{"task autocoder-t1 started", "WAITING FOR A PERSON", "Approve the plan?",
		`answer_task {"id": "autocoder-t1", "reply": "yes"} (or approve_task): approve the plan`,
		`answer_task {"id": "autocoder-t1", "reply": "TEXT"} (or send_feedback with the text)`,
		"no answer by 2030-01-02T03:04:05Z counts as a rejection"} {
		if !strings.Contains(out, want) {
			t.Errorf("the result does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the result holds a terminal escape: %q", out)
	}
	// The notification of the last place may arrive just after the result.
	deadline := time.Now().Add(5 * time.Second)
	for len(got.get()) < 5 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	ps := got.get()
	var msgs []string
	last := -1.0
	for _, p := range ps {
		msgs = append(msgs, p.Message)
		if p.Progress <= last || p.Total != 100 {
			t.Errorf("progress %v of %v after %v: want it to grow, out of 100", p.Progress, p.Total, last)
		}
		last = p.Progress
	}
	want := []string{"[planning] step 0 turn 0: ", "[generating] step 1 turn 1: read calc.py", "[generating] step 1 turn 2: edit calc.py",
		"[generating] step 0 turn 2: rolled back", "[waiting] step 1 turn 0: "}
	if !slices.Equal(msgs, want) {
		t.Errorf("progress messages %q, want one per change of place %q", msgs, want)
	}

	out, isErr = callTool(t, cs, toolAnswer, map[string]any{"id": "autocoder-t1", "reply": "maybe?"})
	if isErr || len(tasks.sent) != 1 || tasks.sent[0] != "feedback autocoder-t1" {
		t.Errorf("free text: %v %q, sent %q; want it sent as feedback", isErr, out, tasks.sent)
	}
	out, isErr = callTool(t, cs, toolAnswer, map[string]any{"id": "autocoder-t1", "reply": "Y"})
	if isErr || tasks.sent[len(tasks.sent)-1] != "approve autocoder-t1" || !strings.Contains(out, "wait_task") {
		t.Errorf("answer Y: %v %q, sent %q; want an approval and the next step", isErr, out, tasks.sent)
	}
}

func TestWaitReturnsWhileTheTaskRuns(t *testing.T) {
	cs, _ := connect(t, &fakeTasks{statuses: []workflows.Status{{Phase: workflows.PhaseChecking, Step: 1}}})
	start := time.Now()
	out, isErr := callTool(t, cs, toolWait, map[string]any{"id": "autocoder-t1", "max_wait_seconds": 1})
	if isErr || !strings.Contains(out, "still running after 1s") || !strings.Contains(out, "phase: checking") {
		t.Errorf("wait past its time: %v %q", isErr, out)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("wait took %s for a 1s limit", d)
	}
}

func TestTranscriptPages(t *testing.T) {
	var msgs []llm.Message
	for i := range 5 {
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Text: fmt.Sprintf("turn %d\x1b[1m", i)})
	}
	tasks := &fakeTasks{statuses: []workflows.Status{{Phase: workflows.PhaseSucceeded}}, convs: []taskclient.Conversation{
		{TranscriptRef: workflows.TranscriptRef{ID: "c1", Step: 1}, Messages: msgs[:3]},
		{TranscriptRef: workflows.TranscriptRef{ID: "c2", Step: 2}, Messages: msgs[3:]},
	}}
	cs, _ := connect(t, tasks)
	out, isErr := callTool(t, cs, toolTranscript, map[string]any{"id": "autocoder-t1", "offset": 2, "limit": 2})
	for _, want := range []string{"step 1 (conversation c1)", "[2] assistant: turn 2", "step 2 (conversation c2)", "[3] assistant: turn 3",
		`messages 2 to 3 of 5; the next page: task_transcript {"id": "autocoder-t1", "offset": 4}`} {
		if isErr || !strings.Contains(out, want) {
			t.Errorf("page does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "turn 1") || strings.Contains(out, "turn 4") || strings.Contains(out, "\x1b") {
		t.Errorf("page holds messages outside it, or an escape:\n%q", out)
	}
	out, _ = callTool(t, cs, toolTranscript, map[string]any{"id": "autocoder-t1", "offset": 4})
	if !strings.Contains(out, "messages 4 to 4 of 5 (the last)") {
		t.Errorf("last page:\n%s", out)
	}
}

func TestPatchWritesOnlyWhenAsked(t *testing.T) {
	tasks := &fakeTasks{statuses: []workflows.Status{{Phase: workflows.PhaseSucceeded}}}
	cs, _ := connect(t, tasks)
	out, isErr := callTool(t, cs, toolPatch, map[string]any{"id": "autocoder-t1"})
	if isErr || !strings.Contains(out, "checkpoint #2 of task autocoder-t1\n--- a/calc.py") || strings.Contains(out, "\x1b") {
		t.Errorf("patch: %v %q", isErr, out)
	}
	if len(tasks.sent) != 0 {
		t.Errorf("get_patch without write_to wrote: %v", tasks.sent)
	}
	out, isErr = callTool(t, cs, toolPatch, map[string]any{"id": "autocoder-t1", "write_to": "/tmp/proj"})
	if isErr || !slices.Equal(tasks.sent, []string{"write"}) || !strings.Contains(out, "wrote 0 changed file(s) to /tmp/proj") {
		t.Errorf("patch with write_to: %v %q, sent %v", isErr, out, tasks.sent)
	}
}

func TestListStripsControlCharacters(t *testing.T) {
	cs, _ := connect(t, &fakeTasks{})
	out, isErr := callTool(t, cs, toolList, map[string]any{})
	if isErr || !strings.Contains(out, "autocoder-t1  running") || strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("list: %v %q", isErr, out)
	}
}

func TestWaitAsksTheUserWhereTheClientCan(t *testing.T) {
	gate := &workflows.Approval{Kind: workflows.GatePlan, Question: "Approve the plan?", Details: "1. add",
		Answers: []workflows.Answer{
			{Words: []string{"yes"}, Signal: workflows.SignalApprove, Means: "approve the plan"},
			{Words: []string{"no"}, Signal: workflows.SignalReject, Means: "reject it"},
		}}
	waiting := workflows.Status{Phase: workflows.PhaseWaiting, Step: 1, Pending: gate}
	for _, tc := range []struct {
		reply, action string
		want          string
		sent          []string
	}{
		{"yes", "accept", "phase: succeeded", []string{"approve autocoder-t1"}},
		{"", "decline", "WAITING FOR A PERSON", nil},
		{"perhaps", "accept", "WAITING FOR A PERSON", nil},
	} {
		var asked []string
		tasks := &fakeTasks{statuses: []workflows.Status{waiting, waiting, waiting, {Phase: workflows.PhaseSucceeded}}}
		cs, _ := connectWith(t, tasks, &sdk.ClientOptions{
			ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				asked = append(asked, r.Params.Message)
				return &sdk.ElicitResult{Action: tc.action, Content: map[string]any{"reply": tc.reply}}, nil
			},
		})
		out, isErr := callTool(t, cs, toolWait, map[string]any{"id": "autocoder-t1"})
		if isErr || !strings.Contains(out, tc.want) || !slices.Equal(tasks.sent, tc.sent) {
			t.Errorf("reply %q (%s): %v %q, sent %q; want %q and %q sent", tc.reply, tc.action, isErr, out, tasks.sent, tc.want, tc.sent)
		}
		if len(asked) != 1 || !strings.Contains(asked[0], "Approve the plan?") || !strings.Contains(asked[0], "yes: approve the plan") {
			t.Errorf("reply %q: the user was asked %q; want the question once, with its answers", tc.reply, asked)
		}
	}
}
