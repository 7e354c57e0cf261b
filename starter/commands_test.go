package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// fakeClient answers as a task client would, from what the test put in it,
// and records what the commands sent.
type fakeClient struct {
	mu       sync.Mutex
	statuses map[string]workflows.Status // a task's status; absent: not found
	results  map[string]workflows.TaskResult
	tasks    []taskclient.Task
	rollback error
	started  []workflows.TaskInput
	dirs     map[string]string // a task's project directory, by id
	sent     []string          // "signal id payload"
	stores   []string          // the workers' stores
}

func newFakeClient() *fakeClient {
	return &fakeClient{statuses: map[string]workflows.Status{}, results: map[string]workflows.TaskResult{}, dirs: map[string]string{}}
}

var errFakeNotFound = fmt.Errorf("workflow not found: %w", taskclient.ErrNotFound)

func (c *fakeClient) record(format string, args ...any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, fmt.Sprintf(format, args...))
	return nil
}

func (c *fakeClient) known(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.statuses[id]; !ok {
		return errFakeNotFound
	}
	return nil
}

func (c *fakeClient) Start(_ context.Context, in workflows.TaskInput, o taskclient.StartOptions) (taskclient.Started, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = append(c.started, in)
	if o.Dir != "" {
		c.dirs["autocoder-new"] = o.Dir
	}
	return taskclient.Started{ID: "autocoder-new", RunID: "run-1"}, nil
}

func (c *fakeClient) ProjectDir(_ context.Context, id string) (string, error) {
	if err := c.known(id); err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dirs[id], nil
}

func (c *fakeClient) EnsureSearchAttributes(context.Context) (bool, error) { return true, nil }

func (c *fakeClient) WorkerStores(context.Context) ([]string, int, error) { return c.stores, 0, nil }

func (c *fakeClient) Status(_ context.Context, id string) (workflows.Status, error) {
	if err := c.known(id); err != nil {
		return workflows.Status{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.statuses[id], nil
}

// Wait returns a result the test gave, or waits as for a running task.
func (c *fakeClient) Wait(ctx context.Context, id string) (workflows.TaskResult, error) {
	if err := c.known(id); err != nil {
		return workflows.TaskResult{}, err
	}
	c.mu.Lock()
	res, ok := c.results[id]
	c.mu.Unlock()
	if ok {
		return res, nil
	}
	<-ctx.Done()
	return res, fmt.Errorf("wait: %w: %w", taskclient.ErrUnreachable, ctx.Err())
}

func (c *fakeClient) ModelCall(_ context.Context, id string) (*taskclient.ModelCall, error) {
	return &taskclient.ModelCall{Activity: "ModelTurn", Attempt: 1, Since: time.Now()}, c.known(id)
}

func (c *fakeClient) Retries(_ context.Context, id string) ([]taskclient.Retry, error) {
	return nil, c.known(id)
}

func (c *fakeClient) List(_ context.Context, o taskclient.ListOptions) ([]taskclient.Task, error) {
	return c.tasks[:min(o.Limit, len(c.tasks))], nil
}

func (c *fakeClient) Reachable(context.Context) error { return nil }

func (c *fakeClient) Approve(_ context.Context, id string, s workflows.ApproveSignal) error {
	return errors.Join(c.known(id), c.record("approve %s %+v", id, s))
}

func (c *fakeClient) Reject(_ context.Context, id string, s workflows.RejectSignal) error {
	return errors.Join(c.known(id), c.record("reject %s %+v", id, s))
}

func (c *fakeClient) Feedback(_ context.Context, id string, s workflows.FeedbackSignal) error {
	return errors.Join(c.known(id), c.record("feedback %s %+v", id, s))
}

func (c *fakeClient) Cancel(_ context.Context, id string, s workflows.CancelSignal) error {
	return errors.Join(c.known(id), c.record("cancel %s %+v", id, s))
}

func (c *fakeClient) CancelNow(_ context.Context, id string) error {
	return errors.Join(c.known(id), c.record("cancel-now %s", id))
}

func (c *fakeClient) Answer(_ context.Context, id string, a workflows.Answer, text string) error {
	return errors.Join(c.known(id), c.record("%s %s %q", a.Signal, id, text))
}

func (c *fakeClient) Rollback(_ context.Context, id string, r workflows.RollbackRequest) (workflows.Status, error) {
	if err := c.known(id); err != nil {
		return workflows.Status{}, err
	}
	_ = c.record("rollback %s %+v", id, r)
	st, _ := c.Status(context.Background(), id)
	return st, c.rollback
}

// cliRun is one command line's outcome.
type cliRun struct {
	code        int
	out, errOut string
}

// runFake runs a command line against c, with the real store in a fresh
// data dir and piped streams.
func runFake(t *testing.T, c *fakeClient, args ...string) cliRun {
	t.Helper()
	f, out, errOut := fakeFactory(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := execute(ctx, f, args)
	return cliRun{code, out.String(), errOut.String()}
}

func fakeFactory(t *testing.T, c *fakeClient) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	cfg := config{TemporalAddress: "127.0.0.1:1", Namespace: "default", DataDir: t.TempDir(), addressSet: true, UIURL: "http://ui"}
	f := NewFactory(cfg, IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.TaskClient = func(context.Context) (TaskClient, error) { return c, nil }
	t.Cleanup(f.Close)
	return f, &out, &errOut
}

func (r cliRun) want(t *testing.T, code int, out, errOut []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.out, r.errOut)
	}
	for _, s := range out {
		if !strings.Contains(r.out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.out)
		}
	}
	for _, s := range errOut {
		if !strings.Contains(r.errOut, s) {
			t.Errorf("stderr lacks %q:\n%s", s, r.errOut)
		}
	}
}

// jsonKeys decodes a JSON object and returns its keys.
func jsonKeys(t *testing.T, s string) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, s)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func hasAll(t *testing.T, got []string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("JSON keys %v lack %q", got, w)
		}
	}
}

// working is a task in its tool loop, reading a file.
var working = workflows.Status{
	Task: "fix the parser", Language: "python", Phase: workflows.PhaseGenerating,
	Plan: []string{"fix it"}, Step: 1, Iteration: 1, MaxIterations: 6,
	Turn: 4, Doing: "read app/models.py", Instructions: []string{"AGENTS.md", "app/AGENTS.md"},
	Transcripts: []workflows.TranscriptRef{{ID: "tr-1", Step: 1}},
}

func TestStatusCommand(t *testing.T) {
	c := newFakeClient()
	c.statuses["t1"] = working
	runFake(t, c, "status", "t1").want(t, exitOK,
		[]string{"phase:     generating", "now:       turn 4: read app/models.py", "instructions read: AGENTS.md, app/AGENTS.md", "model:     waiting for the model"}, nil)

	r := runFake(t, c, "status", "t1", "--json")
	r.want(t, exitOK, nil, nil)
	hasAll(t, jsonKeys(t, r.out), "task", "phase", "turn", "doing", "instructions", "transcripts", "modelCall")

	runFake(t, c, "status", "nope").want(t, exitNotFound, nil, []string{"no task nope here; autocoder list shows the tasks there are"})
	runFake(t, c, "status").want(t, exitUsage, nil, []string{"autocoder status takes ID (got no argument)"})

	done := working
	done.Phase = workflows.PhaseSucceeded
	c.statuses["t2"] = done
	if r := runFake(t, c, "status", "t2"); strings.Contains(r.out, "now:") || strings.Contains(r.out, "model:") {
		t.Errorf("a finished task shows a turn or a model call:\n%s", r.out)
	}
}

func TestListCommand(t *testing.T) {
	c := newFakeClient()
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.tasks = []taskclient.Task{
		{ID: "t1", Status: "running", Phase: "generating", Language: "go", Iteration: 2, CostUSD: 0.0123, Started: started, Task: "fix\x1b[2J the parser"},
		{ID: "t2", Status: "completed", Started: started, Closed: started.Add(time.Minute), Model: "openai:gpt-4.1", Task: "old task without attributes"},
		{ID: "t3", Status: "completed", Phase: "succeeded", Iteration: 1, Started: started, Model: "openai:my-local-model", Task: "a model without a price"},
		{ID: "t4", Status: "completed", Phase: "succeeded", Iteration: 1, Started: started, CostUSD: 0.5, Task: "with usage in its memo",
			Usage: &activities.Usage{PromptTokens: 123456, CachedTokens: 100000, CompletionTokens: 950, CostUSD: 0.0456, Calls: 7}},
	}
	r := runFake(t, c, "list")
	if row := strings.Fields(strings.Split(r.out, "\n")[4]); len(row) < 9 || !slices.Equal(row[5:9], []string{"23.5k", "100.0k", "950", "$0.0456"}) {
		t.Errorf("a task with its usage in the memo: %q, want its tokens fresh in, cached in, out and cost", row)
	}
	if row := strings.Split(r.out, "\n")[3]; !strings.Contains(row, "unknown") {
		t.Errorf("a task of a model without a price: %q, want cost unknown", row)
	}
	r.want(t, exitOK, []string{"ID", "STATUS", "PHASE", "LANG", "ITER", "FRESH IN", "CACHED IN", "OUT", "COST", "TASK", "$0.0123", `fix\x1b[2J the parser`}, nil)
	if row := strings.Split(r.out, "\n")[2]; !strings.Contains(row, "t2") || !strings.Contains(row, "-") {
		t.Errorf("a task without search attributes shows no dashes: %q", row)
	}

	r = runFake(t, c, "list", "--json", "--limit", "1")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("list --json --limit 1: %v, %d rows\n%s", err, len(rows), r.out)
	}
	for _, k := range []string{"id", "status", "phase", "language", "iteration", "costUsd", "started", "task"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("list --json row lacks %q: %v", k, rows[0])
		}
	}
	if r := runFake(t, newFakeClient(), "list", "--json"); strings.TrimSpace(r.out) != "[]" {
		t.Errorf("an empty list is %q, want []", r.out)
	}
	runFake(t, c, "list", "--status", "sleeping").want(t, exitUsage, nil, []string{`--status "sleeping": want one of running, completed`})
	runFake(t, c, "list", "--limit", "0").want(t, exitUsage, nil, []string{"--limit 0"})
}

func TestSignalCommands(t *testing.T) {
	tests := []struct {
		args []string
		sent string
		says string
	}{
		{[]string{"approve", "t1", "--comment", "ok"}, "approve t1 {Comment:ok}", "sent approve to task t1"},
		{[]string{"reject", "t1", "--reason", "use argparse"}, "reject t1 {Reason:use argparse}", "sent reject to task t1"},
		{[]string{"feedback", "t1", "add tests"}, "feedback t1 {Text:add tests}", "sent feedback to task t1"},
		{[]string{"cancel", "t1", "--reason", "enough"}, "cancel t1 {Reason:enough}", "sent cancel to task t1"},
		{[]string{"cancel", "t1", "--force"}, "cancel-now t1", "cancellation requested for task t1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			c := newFakeClient()
			c.statuses["t1"] = working
			runFake(t, c, tt.args...).want(t, exitOK, nil, []string{tt.says})
			if !reflect.DeepEqual(c.sent, []string{tt.sent}) {
				t.Errorf("sent %q, want %q", c.sent, tt.sent)
			}
			unknown := append([]string{tt.args[0], "nope"}, tt.args[2:]...)
			runFake(t, c, unknown...).want(t, exitNotFound, nil, []string{"no task nope here"})
		})
	}
	runFake(t, newFakeClient(), "feedback", "t1").want(t, exitUsage, nil, []string{"autocoder feedback takes ID TEXT (got 1: t1)"})
}

func TestRollbackCommand(t *testing.T) {
	c := newFakeClient()
	c.statuses["t1"] = working
	runFake(t, c, "rollback", "t1", "--to", "1", "--feedback", "smaller steps").want(t, exitOK,
		[]string{"task:      t1", "phase:     generating"}, []string{"task t1 continues from checkpoint 1"})
	if want := "rollback t1 {Checkpoint:1 Feedback:smaller steps}"; !slices.Contains(c.sent, want) {
		t.Errorf("sent %q, want %q", c.sent, want)
	}
	r := runFake(t, c, "rollback", "t1", "--to", "1", "--json")
	hasAll(t, jsonKeys(t, r.out), "phase", "turn")

	c.rollback = &taskclient.RejectedError{Op: "rollback task t1", Message: "unknown checkpoint 9"}
	runFake(t, c, "rollback", "t1", "--to", "9").want(t, exitUsage, nil, []string{"rollback task t1: unknown checkpoint 9"})
	runFake(t, c, "rollback", "t1", "--to", "0").want(t, exitUsage, nil, []string{"--to 0: checkpoints are numbered from 1"})
}

// askingToRun is a client whose task t1 asks before running command.
func askingToRun(command string) *fakeClient {
	c := newFakeClient()
	waiting := working
	waiting.Phase = workflows.PhaseWaiting
	waiting.Pending = &workflows.Approval{Kind: workflows.GateCommand, Question: "Run `" + command + "`?",
		Answers: workflows.GateAnswers(workflows.GateCommand), Deadline: time.Now().Add(time.Hour)}
	c.statuses["t1"] = waiting
	return c
}

func TestWatchCommand(t *testing.T) {
	c := askingToRun("rm -rf build")
	runFake(t, c, "watch", "t1").want(t, exitWaiting, nil,
		[]string{"turn 4: read app/models.py", "? task t1 is waiting for approval (command): Run `rm -rf build`?", "autocoder approve t1"})

	done := working
	done.Phase = workflows.PhaseSucceeded
	c.statuses["t2"] = done
	c.results["t2"] = workflows.TaskResult{Iterations: 2, Status: done}
	runFake(t, c, "watch", "t2").want(t, exitOK, []string{"✔ task t2 succeeded in 2 iteration(s)", "write them with `autocoder export t2 DIR`"}, nil)
	r := runFake(t, c, "watch", "t2", "--json")
	hasAll(t, jsonKeys(t, r.out), "id", "result")

	runFake(t, c, "watch", "nope").want(t, exitNotFound, nil, []string{"no task nope here"})
}

// TestWatchAnswersACommandGate: on a terminal, watch asks the command gate
// like the others and sends what the task says the answer means.
func TestWatchAnswersACommandGate(t *testing.T) {
	c := askingToRun("make deploy")
	f, _, errOut := fakeFactory(t, c)
	f.IO.In, f.IO.InTTY, f.IO.ErrTTY = strings.NewReader("\nno deploys\n"), true, true
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- execute(ctx, f, []string{"watch", "t1"}) }()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		sent := slices.Clone(c.sent)
		c.mu.Unlock()
		if len(sent) > 0 {
			if want := []string{`reject t1 "no deploys"`}; !reflect.DeepEqual(sent, want) {
				t.Errorf("sent %q, want %q", sent, want)
			}
			break
		}
		select {
		case <-deadline:
			t.Fatalf("nothing sent; screen:\n%s", errOut)
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	<-done
}

func TestRunCommand(t *testing.T) {
	c := newFakeClient()
	r := runFake(t, c, "run", "--detach", "--json", "--lang", "go", "--max-turns", "30", "--context-tokens", "60000",
		"--max-output-tokens", "4000", "--approve-commands", "--allow-command", "pytest", "--allow-command", "go test ./a,b", "  fix it  ")
	r.want(t, exitOK, nil, []string{"task autocoder-new started", "web UI: http://ui"})
	if got := jsonKeys(t, r.out); !reflect.DeepEqual(got, []string{"id", "runId", "url"}) {
		t.Errorf("run --detach --json keys %v, want id, runId, url", got)
	}
	if len(c.started) != 1 {
		t.Fatalf("started %d tasks, want 1", len(c.started))
	}
	in := c.started[0]
	want := workflows.TaskInput{Task: "fix it", Language: "go", MaxIterations: workflows.DefaultMaxIterations,
		Policy: workflows.PolicyWarn, ApprovalTimeout: workflows.DefaultApprovalTimeout, SearchAttributes: true,
		Agent:           workflows.AgentLimits{MaxTurns: 30, ContextTokens: 60000, MaxOutputTokens: 4000},
		ApproveCommands: true, CommandAllow: []string{"pytest", "go test ./a,b"}}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("task input\n got %+v\nwant %+v", in, want)
	}

	if r := runFake(t, c, "run", "--detach", "fix it"); strings.TrimSpace(r.out) != "autocoder-new" {
		t.Errorf("run --detach prints %q, want the id alone", r.out)
	}
	runFake(t, c, "run", "--detach", "--out", "./result", "fix it").want(t, exitOK, nil,
		[]string{"`autocoder watch autocoder-new`", "`autocoder export autocoder-new ./result`"})
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"--allow-command", "pytest"}, "--allow-command needs --approve-commands"},
		{[]string{"--approve-commands", "--allow-command", " "}, "an empty prefix"},
		{[]string{"--max-turns=-1"}, "--max-turns"},
		{[]string{"--lang", "cobol"}, `--lang "cobol"`},
		{[]string{"--model", "openai:my-local-model", "--budget-usd", "1"}, "--budget-usd: the price of my-local-model is unknown"},
	} {
		args := append(append([]string{"run", "--detach"}, tt.args...), "fix it")
		runFake(t, c, args...).want(t, exitUsage, nil, []string{tt.err})
	}
	runFake(t, c, "run", "--detach", " ").want(t, exitUsage, nil, []string{"the task text is empty"})
}

// TestCommandsParseFlags hands each command's parsed options to a run
// function instead of running it.
func TestCommandsParseFlags(t *testing.T) {
	f, _, _ := fakeFactory(t, newFakeClient())
	local := NewFactory(config{DataDir: t.TempDir()}, f.IO) // local mode: no Temporal address
	var got any
	capture := func(o any) error { got = o; return nil }
	tests := []struct {
		cmd  *cobra.Command
		args []string
		want any
	}{
		{NewCmdStatus(f, func(o *StatusOptions) error { return capture(*o) }), []string{"t1", "--json"}, StatusOptions{ID: "t1", JSON: true}},
		{NewCmdWatch(f, func(o *WatchOptions) error { return capture(*o) }), []string{"t1"}, WatchOptions{ID: "t1"}},
		{NewCmdList(f, func(o *ListOptions) error { return capture(*o) }), []string{"--status", "failed"}, ListOptions{Status: "failed", Limit: 50}},
		{NewCmdApprove(f, func(o *ApproveOptions) error { return capture(*o) }), []string{"t1", "--comment", "ok"}, ApproveOptions{ID: "t1", Comment: "ok"}},
		{NewCmdReject(f, func(o *RejectOptions) error { return capture(*o) }), []string{"t1", "--reason", "no"}, RejectOptions{ID: "t1", Reason: "no"}},
		{NewCmdFeedback(f, func(o *FeedbackOptions) error { return capture(*o) }), []string{"t1", "more"}, FeedbackOptions{ID: "t1", Text: "more"}},
		{NewCmdCancel(f, func(o *CancelOptions) error { return capture(*o) }), []string{"t1", "--force"}, CancelOptions{ID: "t1", Force: true}},
		{NewCmdRollback(f, func(o *RollbackOptions) error { return capture(*o) }), []string{"t1", "--to", "2", "--json"}, RollbackOptions{ID: "t1", To: 2, JSON: true}},
		{NewCmdResume(f, func(o *ResumeOptions) error { return capture(*o) }), []string{"t1", "--out", "d"}, ResumeOptions{ID: "t1", Out: "d"}},
		{NewCmdExport(f, func(o *ExportOptions) error { return capture(*o) }), []string{"t1", "--transcript", "t.json"}, ExportOptions{ID: "t1", Transcript: "t.json"}},
		{NewCmdExport(f, func(o *ExportOptions) error { return capture(*o) }), []string{"t1", "dir", "--git", "--checkpoint", "2"}, ExportOptions{ID: "t1", Dir: "dir", Git: true, Checkpoint: 2}},
		{NewCmdTranscript(f, func(o *TranscriptOptions) error { return capture(*o) }), []string{"t1", "-f"}, TranscriptOptions{ID: "t1", Follow: true}},
		{NewCmdWorker(f, func(o *WorkerOptions) error { return capture(o.Slots) }), []string{"--sandbox-slots", "3"}, 3},
		{NewCmdDev(local, func(o *DevOptions) error { return capture(*o) }), []string{"--idle-timeout", "5m"}, DevOptions{IdleTimeout: 5 * time.Minute}},
		{NewCmdRun(f, func(o *RunOptions) error { return capture(o.AllowCommands) }), []string{"--allow-command", "a,b", "--allow-command", "c", "t"}, []string{"a,b", "c"}},
		{NewCmdLessons(f, func(name string, o *LessonsOptions) error { return capture(name + " " + o.Kind) }), []string{"list", "--kind", "fix"}, "list fix"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd.Name()+" "+strings.Join(tt.args, " "), func(t *testing.T) {
			got = nil
			tt.cmd.SetArgs(tt.args)
			tt.cmd.SetOut(&bytes.Buffer{})
			if err := tt.cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("options %+v, want %+v", got, tt.want)
			}
		})
	}
}

// appendTranscript stores a conversation in the factory's store.
func appendTranscript(t *testing.T, f *Factory, id string, msgs ...llm.Message) {
	t.Helper()
	st, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var entries [][]byte
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		entries = append(entries, b)
	}
	if _, err := st.AppendEntries(context.Background(), id, 0, entries); err != nil {
		t.Fatal(err)
	}
}

var conversation = []llm.Message{
	{Role: llm.RoleAssistant, Text: "Let me look.\x1b]52;c;aGk=\x07", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"app/models.py"}`}}},
	{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "c1", Name: "read", Content: "class Model: ..."}},
	{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "c2", Name: "run", Content: "exit 1", IsError: true}},
}

func TestTranscriptCommand(t *testing.T) {
	c := newFakeClient()
	c.statuses["t1"] = working
	run := func(args ...string) cliRun {
		f, out, errOut := fakeFactory(t, c)
		appendTranscript(t, f, "tr-1", conversation...)
		code := execute(context.Background(), f, args)
		return cliRun{code, out.String(), errOut.String()}
	}
	run("transcript", "t1").want(t, exitOK, []string{
		"── step 1 (conversation tr-1) ──", "assistant:", `Let me look.\x1b]52;c;aGk=\x07`,
		`→ read {"path":"app/models.py"}`, "← read result:", "class Model: ...", "← run error:", "exit 1"}, nil)

	r := run("transcript", "t1", "--json")
	var convs []taskclient.Conversation
	if err := json.Unmarshal([]byte(r.out), &convs); err != nil || len(convs) != 1 || len(convs[0].Messages) != 3 || convs[0].Step != 1 {
		t.Fatalf("transcript --json: %v\n%s", err, r.out)
	}
	if !reflect.DeepEqual(convs[0].Messages, conversation) {
		t.Errorf("messages\n got %+v\nwant %+v", convs[0].Messages, conversation)
	}
	// --follow prints each message once, however often it reads them,
	// until the task is done.
	follow := &pollingClient{fakeClient: c, polls: map[string][]pollAnswer{"t1": {
		{st: working}, {st: working}, {st: workflows.Status{Phase: workflows.PhaseSucceeded, Transcripts: working.Transcripts}},
	}}}
	f, out, errOut := fakeFactory(t, c)
	f.TaskClient = func(context.Context) (TaskClient, error) { return follow, nil }
	appendTranscript(t, f, "tr-1", conversation...)
	r = cliRun{execute(context.Background(), f, []string{"transcript", "t1", "--follow"}), out.String(), errOut.String()}
	r.want(t, exitOK, nil, nil)
	if n := strings.Count(r.out, "class Model"); n != 1 {
		t.Errorf("--follow printed a message %d times:\n%s", n, r.out)
	}
	run("transcript", "nope").want(t, exitNotFound, nil, []string{"no task nope here"})
	run("transcript", "t1", "--json", "--follow").want(t, exitUsage, nil, []string{"--follow"})

	c.statuses["t0"] = workflows.Status{Phase: workflows.PhasePlanning}
	run("transcript", "t0").want(t, exitOK, nil, []string{"task t0 has no conversation yet"})
}

func TestExportCommand(t *testing.T) {
	c := newFakeClient()
	c.statuses["t1"] = working
	f, _, errOut := fakeFactory(t, c)
	appendTranscript(t, f, "tr-1", conversation...)
	path := filepath.Join(t.TempDir(), "transcript.json")
	if code := execute(context.Background(), f, []string{"export", "t1", "--transcript", path}); code != exitOK {
		t.Fatalf("export --transcript: exit %d\n%s", code, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var convs []taskclient.Conversation
	if err := json.Unmarshal(data, &convs); err != nil || len(convs) != 1 || len(convs[0].Messages) != 3 {
		t.Errorf("exported transcript: %v\n%s", err, data)
	}
	if !strings.Contains(errOut.String(), "wrote 1 conversation(s) to "+path) {
		t.Errorf("stderr: %s", errOut)
	}

	runFake(t, c, "export", "t1").want(t, exitUsage, nil, []string{"export needs a directory unless --patch or --transcript is given"})
	runFake(t, c, "export", "t1", t.TempDir()).want(t, exitTaskFailed, nil, []string{"the task has no checkpoints yet"})
	runFake(t, c, "export", "nope", t.TempDir()).want(t, exitNotFound, nil, []string{"no task nope here"})
}

func TestLessonsCommand(t *testing.T) {
	c := newFakeClient()
	runFake(t, c, "lessons", "list").want(t, exitOK, []string{"ID", "KIND", "SIGNATURE"}, nil)
	if r := runFake(t, c, "lessons", "list", "--json"); strings.TrimSpace(r.out) != "null" && strings.TrimSpace(r.out) != "[]" {
		t.Errorf("lessons list --json on an empty store: %q", r.out)
	}
	runFake(t, c, "lessons", "list", "--kind", "wisdom").want(t, exitUsage, nil, []string{`--kind "wisdom"`})
	runFake(t, c, "lessons", "show", "0123456789ab").want(t, exitNotFound, nil, []string{"no lesson"})
}

// TestExitCodes: the kinds of error a command meets, each to its code.
func TestExitCodes(t *testing.T) {
	ctx := context.Background()
	interrupted, cancel := context.WithCancel(ctx)
	cancel()
	for _, tt := range []struct {
		err  error
		ctx  context.Context
		want int
	}{
		{nil, ctx, exitOK},
		{fmt.Errorf("x: %w", taskclient.ErrNotFound), ctx, exitNotFound},
		{fmt.Errorf("x: %w", errUnavailable), ctx, exitUnavailable},
		{usageError("bad"), ctx, exitUsage},
		{errWaiting, ctx, exitWaiting},
		{&taskclient.FailedError{Message: "no"}, ctx, exitTaskFailed},
		{errors.New("anything"), interrupted, exitInterrupted},
	} {
		if got := exitCode(tt.err, tt.ctx); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	c := newFakeClient()
	f, _, errOut := fakeFactory(t, c)
	f.TaskClient = func(context.Context) (TaskClient, error) {
		return nil, fmt.Errorf("%w: cannot reach Temporal", errUnavailable)
	}
	if code := execute(ctx, f, []string{"status", "t1"}); code != exitUnavailable || !strings.Contains(errOut.String(), "cannot reach Temporal") {
		t.Errorf("unreachable: exit %d, stderr %s", code, errOut)
	}
}

// A file of the user's whose name cannot be written faithfully (a newline,
// an escape sequence, bytes that are not UTF-8) is left out of the upload
// and named, escaped; the task starts with the rest.
func TestRunReportsUnsafeNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"main.go", "a\nb.go", "\x1b[31mred.go", "caf\xe9.go"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("package main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := newFakeClient()
	r := runFake(t, c, "run", "--detach", "--lang", "go", "--dir", dir, "fix it")
	r.want(t, exitOK, nil, []string{"1 files, 13 bytes; 3 skipped", `skipped "a\nb.go"`, `skipped "\x1b[31mred.go"`, `skipped "caf\xe9.go"`})
	if strings.ContainsRune(r.errOut, 0x1b) {
		t.Errorf("stderr carries a raw escape:\n%q", r.errOut)
	}
	if len(c.started) != 1 || c.started[0].InputSnapshot == "" {
		t.Errorf("started %+v, want one task with the uploaded snapshot", c.started)
	}
}

// pollAnswer is one answer of a status query: a status, or an error.
type pollAnswer struct {
	st  workflows.Status
	err error
}

// pollingClient answers a task's status queries in the order polls gives,
// repeating the last answer; once a task is down to an error for ever,
// Reachable fails too, as with a server that went away.
type pollingClient struct {
	*fakeClient
	mu    sync.Mutex
	polls map[string][]pollAnswer
}

func (c *pollingClient) Status(ctx context.Context, id string) (workflows.Status, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	as, ok := c.polls[id]
	if !ok {
		return c.fakeClient.Status(ctx, id)
	}
	a := as[0]
	if len(as) > 1 {
		c.polls[id] = as[1:]
	}
	return a.st, a.err
}

func (c *pollingClient) Reachable(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, as := range c.polls {
		if len(as) == 1 && as[0].err != nil {
			return as[0].err
		}
	}
	return nil
}

// TestTranscriptFollowLosesContactLikeWatch: the server goes away while
// transcript --follow prints a running task. It says so, keeps trying for
// the contact timeout and exits 3 naming resume, as watch does, instead of
// waiting for ever.
func TestTranscriptFollowLosesContactLikeWatch(t *testing.T) {
	gone := fmt.Errorf("query: %w", taskclient.ErrUnreachable)
	c := &pollingClient{fakeClient: newFakeClient(), polls: map[string][]pollAnswer{"t1": {{st: working}, {st: working}, {err: gone}}}}
	c.statuses["t1"] = working
	f, out, errOut := fakeFactory(t, c.fakeClient)
	f.cfg.settings = settingsFor(t, map[string]string{"AUTOCODER_CONTACT_TIMEOUT": "2s"})
	f.TaskClient = func(context.Context) (TaskClient, error) { return c, nil }
	appendTranscript(t, f, "tr-1", conversation...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	code := execute(ctx, f, []string{"transcript", "t1", "--follow"})
	took := time.Since(start)
	cliRun{code, out.String(), errOut.String()}.want(t, exitUnavailable, []string{"class Model"}, []string{
		"lost contact with Temporal at 127.0.0.1:1; retrying for up to 2s",
		"lost contact with Temporal at 127.0.0.1:1; the task may still be running: autocoder resume t1",
	})
	if took < 2*time.Second || took > 15*time.Second {
		t.Errorf("gave up after %s; want the contact timeout of 2s and a little", took.Round(time.Millisecond))
	}
}

// TestEmptyIDIsAUsageError: every command that takes an id answers an
// empty or blank one with exit 2 and a line naming its usage, and asks
// the server nothing. The table must name every such command of the tree.
func TestEmptyIDIsAUsageError(t *testing.T) {
	lines := map[string][]string{
		"approve":        {"approve", ""},
		"reject":         {"reject", " ", "--reason", "no"},
		"feedback":       {"feedback", "", "go on"},
		"cancel":         {"cancel", ""},
		"rollback":       {"rollback", "", "--to", "1"},
		"watch":          {"watch", ""},
		"resume":         {"resume", "\t"},
		"export":         {"export", "", t.TempDir()},
		"status":         {"status", ""},
		"transcript":     {"transcript", "", "--follow"},
		"lessons show":   {"lessons", "show", ""},
		"lessons forget": {"lessons", "forget", ""},
	}
	f, _, _ := fakeFactory(t, newFakeClient())
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		if use := strings.Fields(cmd.Use); len(use) > 1 && use[1] == "ID" {
			if _, ok := lines[strings.TrimPrefix(cmd.CommandPath(), "autocoder ")]; !ok {
				t.Errorf("%s takes an ID but is not in the table", cmd.CommandPath())
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(f))
	for name, args := range lines {
		c := newFakeClient()
		c.statuses[""] = working // an empty id reaching the client would find a task
		r := runFake(t, c, args...)
		what := "task"
		if strings.HasPrefix(name, "lessons") {
			what = "lesson"
		}
		r.want(t, exitUsage, nil, []string{fmt.Sprintf("the %s id is empty (autocoder %s ID", what, name)})
		if strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 || len(c.sent) != 0 {
			t.Errorf("%s: want one line and nothing sent; sent %v, stderr:\n%s", name, c.sent, r.errOut)
		}
	}
}

// TestResumeWritesBackIntoTheProject: run --dir records the project, and
// resume of that task, from another directory, writes the files back into
// it as run would have, not into ./<task id>; --out still wins, and a
// project that is not here is a usage error rather than a directory made
// anew.
func TestResumeWritesBackIntoTheProject(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient()
	f, out, errOut := fakeFactory(t, c)
	project := t.TempDir()
	must(t, os.WriteFile(filepath.Join(project, "app.py"), []byte("x = 1\n"), 0o644))
	t.Chdir(project)
	if code := execute(ctx, f, []string{"run", "--detach", "--lang", "python", "--dir", ".", "fix it"}); code != exitOK {
		t.Fatalf("run --dir: exit %d\n%s", code, errOut)
	}
	const id = "autocoder-new"
	if c.dirs[id] != project {
		t.Fatalf("run --dir . recorded the project as %q, want %q", c.dirs[id], project)
	}
	st, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done, err := st.PutSnapshot(ctx, []workspace.File{{Path: "app.py", Data: []byte("x = 2\n")}})
	if err != nil {
		t.Fatal(err)
	}
	status := workflows.Status{Phase: workflows.PhaseSucceeded, InputSnapshot: c.started[0].InputSnapshot}
	c.statuses[id] = status
	c.results[id] = workflows.TaskResult{SnapshotID: done, Iterations: 1, Status: status}

	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	out.Reset()
	if code := execute(ctx, f, []string{"resume", id}); code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(project, "app.py")); string(b) != "x = 2\n" {
		t.Errorf("the project's app.py is %q after resume, want the task's", b)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, id)); !os.IsNotExist(err) {
		t.Errorf("resume made ./%s (%v)", id, err)
	}
	if !strings.Contains(out.String(), "written to "+project) {
		t.Errorf("resume output names no project:\n%s", out)
	}

	other := filepath.Join(t.TempDir(), "other")
	if code := execute(ctx, f, []string{"resume", id, "--out", other}); code != exitOK {
		t.Fatalf("resume --out: exit %d\n%s", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "app.py")); string(b) != "x = 2\n" {
		t.Errorf("resume --out wrote %q, want the task's app.py", b)
	}

	c.dirs[id] = filepath.Join(elsewhere, "gone")
	r := runFake(t, c, "resume", id)
	r.want(t, exitUsage, nil, []string{"task autocoder-new works on " + c.dirs[id] + ", which is not a directory here; write its files elsewhere with --out DIR"})
	if _, err := os.Stat(c.dirs[id]); !os.IsNotExist(err) {
		t.Errorf("resume made the missing project (%v)", err)
	}
}

// TestPrintLesson: lessons show leaves out what a lesson does not have and
// calls a success's plan a plan.
func TestPrintLesson(t *testing.T) {
	var b bytes.Buffer
	printLesson(&b, store.Lesson{ID: "abc", Kind: store.LessonSuccess, Language: "python", Task: "add numbers", Fix: "1. write add"})
	got := b.String()
	for _, s := range []string{"signature", "fix:", "failure", "diagnosis", "updated"} {
		if strings.Contains(got, s) {
			t.Errorf("a success lesson shows %q:\n%s", s, got)
		}
	}
	if !strings.Contains(got, "plan:\n    1. write add") {
		t.Errorf("a success lesson's plan is not labelled plan:\n%s", got)
	}

	b.Reset()
	printLesson(&b, store.Lesson{ID: "def", Kind: store.LessonFix, SigKind: "python:AssertionError", Fix: "-a\n+b"})
	got = b.String()
	if !strings.Contains(got, "signature:  python:AssertionError\n") || !strings.Contains(got, "fix:\n") || strings.Contains(got, "plan:") {
		t.Errorf("a fix lesson:\n%s", got)
	}
}

// TestTranscriptKeepsCodeIndentation: the code a write or an edit carries
// is shown with its lines and indentation, still made safe for a terminal.
func TestTranscriptKeepsCodeIndentation(t *testing.T) {
	var b bytes.Buffer
	p := &transcriptPrinter{w: &b, seen: map[string]int{}}
	p.message(llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "write",
		Arguments: `{"path":"calc.py","content":"def add(a, b):\n    if a:\n        return a + b  # \u001b[2J\n    return b\n"}`}}})
	got := b.String()
	for _, want := range []string{
		`→ write {"path":"calc.py"}`,
		"    content:\n",
		"        def add(a, b):\n            if a:\n                return a + b  # \\x1b[2J\n            return b\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("transcript lacks %q:\n%s", want, got)
		}
	}
}

// TestCostOfUnpricedModel: a model without a known price costs "unknown",
// not $0, in status, in watch's line and in the final line.
func TestCostOfUnpricedModel(t *testing.T) {
	c := newFakeClient()
	done := working
	done.Phase = workflows.PhaseSucceeded
	done.Usage = activities.Usage{PromptTokens: 100, CompletionTokens: 20, Calls: 2, Unpriced: 2}
	c.statuses["t1"] = done
	c.results["t1"] = workflows.TaskResult{Iterations: 1, Status: done}
	runFake(t, c, "status", "t1").want(t, exitOK, []string{"(2 calls, cost unknown)"}, nil)
	runFake(t, c, "watch", "t1").want(t, exitOK, []string{"tokens: 100 in, 20 out, cost unknown"}, nil)
	if s := statusLine(done); !strings.Contains(s, "cost unknown") || strings.Contains(s, "$") {
		t.Errorf("status line %q, want cost unknown", s)
	}
	for _, c := range []struct {
		u    activities.Usage
		want string
	}{
		{activities.Usage{CostUSD: 0.5, Calls: 1}, "$0.5000"},
		{activities.Usage{Calls: 1}, "$0.0000"},
		{activities.Usage{CostUSD: 0.5, Calls: 2, Unpriced: 1}, "$0.5000 and unknown"},
	} {
		if u, want := c.u, c.want; u.Cost() != want {
			got := u.Cost()
			t.Errorf("Cost(%+v) = %q, want %q", u, got, want)
		}
	}
}

// TestStatusNamesTheFallbackAndTokensPerModel: status names the model that
// answered the last turn and the one it stood in for, and each model's
// tokens and cost.
func TestStatusNamesTheFallbackAndTokensPerModel(t *testing.T) {
	c := newFakeClient()
	st := working
	st.Model, st.FellBack = "openai:gpt-4.1", "anthropic:claude-sonnet-4-5: HTTP 503"
	st.Usage = activities.Usage{PromptTokens: 300, CompletionTokens: 30, Calls: 3, CostUSD: 0.5, PerModel: []activities.ModelUsage{
		{Model: "anthropic:claude-sonnet-4-5", PromptTokens: 100, CompletionTokens: 10, Calls: 1, CostUSD: 0.25},
		{Model: "openai:gpt-4.1", PromptTokens: 200, CompletionTokens: 20, Calls: 2, CostUSD: 0.25},
	}}
	c.statuses["t1"] = st
	runFake(t, c, "status", "t1").want(t, exitOK, []string{
		"model:     openai:gpt-4.1 (fell back from anthropic:claude-sonnet-4-5: HTTP 503)\n",
		"  anthropic:claude-sonnet-4-5: 100 in, 10 out (1 calls, cost $0.2500)\n",
		"  openai:gpt-4.1: 200 in, 20 out (2 calls, cost $0.2500)\n",
	}, nil)
}

// TestStatusSplitsCachedInput: with prompt caching, status splits each
// model's input into fresh and cached tokens, and says what was written to
// the cache; the task's line too.
func TestStatusSplitsCachedInput(t *testing.T) {
	c := newFakeClient()
	st := working
	st.Usage = activities.Usage{PromptTokens: 5000, CachedTokens: 3000, CacheWriteTokens: 1500, CompletionTokens: 40, Calls: 3, CostUSD: 0.02,
		PerModel: []activities.ModelUsage{
			{Model: "anthropic:claude-sonnet-4-5", PromptTokens: 4000, CachedTokens: 2000, CacheWriteTokens: 1500, CompletionTokens: 30, Calls: 2, CostUSD: 0.015},
			{Model: "openai:gpt-4.1", PromptTokens: 1000, CachedTokens: 1000, CompletionTokens: 10, Calls: 1, CostUSD: 0.005},
		}}
	c.statuses["t1"] = st
	runFake(t, c, "status", "t1").want(t, exitOK, []string{
		"tokens:    5000 in (500 fresh, 3000 cached, 1500 written to the cache), 40 out (3 calls, cost $0.0200)\n",
		"  anthropic:claude-sonnet-4-5: 4000 in (500 fresh, 2000 cached, 1500 written to the cache), 30 out (2 calls, cost $0.0150)\n",
		"  openai:gpt-4.1: 1000 in (0 fresh, 1000 cached), 10 out (1 calls, cost $0.0050)\n",
	}, nil)
}

// TestRunChecksTheWorkersStore: a client whose store the workers do not
// name stops before it uploads the project or starts a task; one whose
// store they name starts it.
func TestRunChecksTheWorkersStore(t *testing.T) {
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "calc.py"), []byte("def add(a, b):\n    return a - b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--detach", "--dir", project, "fix add"}
	c := newFakeClient()
	c.stores = []string{"0123456789abcdef0123456789abcdef"}
	r := runFake(t, c, args...)
	r.want(t, exitUsage, nil, []string{"read another store than this client's (SQLite at ", "Set AUTOCODER_DATABASE_URL"})
	if strings.Contains(r.errOut, "uploaded") || len(c.started) != 0 {
		t.Errorf("uploaded or started (%d tasks) before the check:\n%s", len(c.started), r.errOut)
	}
	// Without a project too: its results would be written where the
	// client does not read.
	runFake(t, c, "run", "--detach", "write calc.py").want(t, exitUsage, nil, []string{"read another store than this client's"})
	if len(c.started) != 0 {
		t.Errorf("a task without a project started (%d)", len(c.started))
	}

	f, _, errOut := fakeFactory(t, c)
	st, err := store.OpenSQLite(context.Background(), f.cfg.sqlitePath())
	if err != nil {
		t.Fatal(err)
	}
	id, err := st.ID(context.Background())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	c.stores = append(c.stores, id)
	if code := execute(context.Background(), f, args); code != exitOK || len(c.started) != 1 {
		t.Errorf("with the workers' store: exit %d, %d tasks started\n%s", code, len(c.started), errOut)
	}
}
