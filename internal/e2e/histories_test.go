package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/mcptools"
	"github.com/autocoder/autocoder/internal/mcptools/mcptest"
	"github.com/autocoder/autocoder/internal/notify"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
	"github.com/autocoder/autocoder/workflows"
)

// historyCase is one recorded story of the workflow: how the task is
// asked for, how the scripted model behaves, and what a person does.
type historyCase struct {
	name         string
	failures     int           // attempts whose code is wrong before the right one
	socket       bool          // the code imports socket, which the safety policy flags
	tamper       bool          // the project has the user's tests and the model weakens them
	command      bool          // the model runs a command before the tests
	slow         time.Duration // each turn's answer takes this long
	notify       bool          // the task tells a webhook at its gates and its end
	workerNotify bool          // the worker has a webhook of its own
	mcp          bool          // the model first looks a word up with an MCP server's tool
	install      bool          // the model first adds a package with the install tool
	input        func(*workflows.TaskInput)
	// drive plays the person while the task runs; it returns when the
	// task needs nothing more from it.
	drive func(ctx context.Context, t *testing.T, tc *taskclient.Client, id string)
	// wantFail: the task ends without success (cancelled).
	wantFail bool
}

var historyCases = []historyCase{
	{name: "fail_then_pass", failures: 1},
	{name: "gate_plan", input: func(in *workflows.TaskInput) { in.ApprovePlan = true }, drive: answerGates(workflows.GatePlan)},
	{name: "gate_policy", socket: true, input: func(in *workflows.TaskInput) { in.Policy = workflows.PolicyAsk }, drive: answerGates(workflows.GatePolicy)},
	{name: "policy_warn", socket: true, input: func(in *workflows.TaskInput) { in.Policy = workflows.PolicyWarn }},
	{name: "gate_budget", input: func(in *workflows.TaskInput) { in.BudgetTokens = 500 }, drive: answerGates(workflows.GateBudget)},
	{name: "gate_stuck", failures: 1, input: func(in *workflows.TaskInput) { in.MaxIterations, in.AskWhenStuck = 1, true },
		drive: answerGates(workflows.GateStuck)},
	{name: "gate_integrity", tamper: true, input: func(in *workflows.TaskInput) { in.MaxIterations = 1 }, drive: answerGates(workflows.GateIntegrity)},
	{name: "gate_command", command: true, input: func(in *workflows.TaskInput) { in.ApproveCommands = true }, drive: answerGates(workflows.GateCommand)},
	{name: "rollback", failures: 1, input: func(in *workflows.TaskInput) { in.MaxIterations, in.AskWhenStuck = 1, true }, drive: rollBack},
	{name: "cancel", input: func(in *workflows.TaskInput) { in.ApprovePlan = true }, drive: cancelAtPlan, wantFail: true},
	{name: "continue_as_new_signal", failures: 2, slow: 300 * time.Millisecond, input: func(in *workflows.TaskInput) { in.MaxIterations, in.HistoryLimit = 4, 30 },
		drive: feedbackAcrossRuns},
	{name: "guidance_between_turns", slow: 400 * time.Millisecond, drive: guideMidAttempt},
	{name: "notifications", notify: true, input: func(in *workflows.TaskInput) { in.ApprovePlan = true }, drive: answerGates(workflows.GatePlan)},
	{name: "worker_notifications", workerNotify: true, input: func(in *workflows.TaskInput) { in.ApprovePlan = true }, drive: answerGates(workflows.GatePlan)},
	{name: "mcp_tools", mcp: true},
	{name: "setup", input: func(in *workflows.TaskInput) { in.Setup = "mkdir -p gen && echo 'ANSWER = 42' > gen/answer.py" }},
	{name: "install_tool", install: true},
}

// TestRecordReplayHistories runs each story of historyCases on a real
// Temporal server, worker, sandbox and store, with the scripted model
// speaking tool calls, and writes every run's history to
// workflows/testdata, which TestReplayRecordedHistories replays. Only on
// demand, after a change to the workflow that is not guarded by a
// version:
//
//	AUTOCODER_RECORD_HISTORY=1 go test ./internal/e2e -run TestRecordReplayHistories
func TestRecordReplayHistories(t *testing.T) {
	t.Parallel()
	if os.Getenv("AUTOCODER_RECORD_HISTORY") != "1" {
		t.Skip("records the replay histories only with AUTOCODER_RECORD_HISTORY=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, st, c := services(ctx, t, sandbox.Config{Forwarder: testenv.Forwarder(t, false)})
	tc := taskClient(c)
	model := llmtest.New(t, historyScript())
	name, whl := registrytest.PureWheel(t, historyPackage, "1.0", "VERSION = '1.0'\n")
	index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
	eg, err := worker.StartEgress(egress.Config{Registries: []string{index.Host()}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer eg.Close()
	acts := &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(llm.Env{OpenAIKey: "test-key", OpenAIBaseURL: model.URL()}),
		Egress: eg.Routes(), DepsIndexes: map[string]string{"python": index.URL()}}
	pool := mcptools.NewPool([]mcptools.Server{{Name: "docs", Command: mcptest.LookupServer(t), Args: []string{filepath.Join(t.TempDir(), "calls.log")}, Tools: []string{"lookup"}}}, nil)
	defer pool.Close()
	acts.MCP = pool
	w := worker.New(c, acts, worker.Options{})
	if err := w.Start(); err != nil {
		t.Fatalf("start worker: %v", err)
	}
	defer w.Stop()

	dir := filepath.Join("..", "..", "workflows", "testdata")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, hc := range historyCases {
		t.Run(hc.name, func(t *testing.T) {
			in := workflows.TaskInput{Task: hc.task(), Language: "python", MaxIterations: 3, Model: "openai:gpt-4.1-mini",
				ApprovalTimeout: time.Hour}
			if hc.tamper {
				snap, err := st.PutSnapshot(ctx, []workspace.File{
					{Path: "calc.py", Data: []byte(historyCode(false))},
					{Path: "test_calc.py", Data: []byte(historyTest)},
				})
				if err != nil {
					t.Fatal(err)
				}
				in.InputSnapshot, in.TestCmd = snap, "python3 -m pytest -q"
			}
			if hc.input != nil {
				hc.input(&in)
			}
			if hc.notify {
				in.Notify = webhookRecord(ctx, t, st)
			}
			if hc.workerNotify {
				acts.WorkerNotify = activities.WorkerNotify{Targets: []notify.Target{{URL: webhook(t) + "/team", Format: notify.FormatJSON}}}
				defer func() { acts.WorkerNotify = activities.WorkerNotify{} }()
			}
			id := "history-" + strings.ReplaceAll(hc.name, "_", "-")
			if _, err := tc.Start(ctx, in, taskclient.StartOptions{ID: id}); err != nil {
				t.Fatal(err)
			}
			if hc.drive != nil {
				hc.drive(ctx, t, tc, id)
			}
			if _, err := tc.Wait(ctx, id); (err != nil) != hc.wantFail {
				t.Fatalf("task ended with error %v; want failure: %v", err, hc.wantFail)
			}
			recordRuns(ctx, t, tc, id, dir, hc.name)
		})
	}
}

// webhookRecord stores a record of one webhook, a local receiver, and
// returns its key.
func webhookRecord(ctx context.Context, t *testing.T, st notify.MemoStore) string {
	ref, err := notify.Save(ctx, st, notify.Record{Targets: []notify.Target{{URL: webhook(t) + "/hook", Format: notify.FormatJSON}}})
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// webhook is a local receiver's URL, which takes every message.
func webhook(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

func (hc historyCase) task() string {
	return fmt.Sprintf("History case %s: write a function add(a, b) in calc.py that returns the sum, with pytest tests.", hc.name)
}

var historyCaseRE = regexp.MustCompile(`History case (\w+):`)

// historyPackage is what the install_tool case adds, from an index the
// recording serves.
const historyPackage = "historylib"

const historyTest = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"

func historyCode(right bool) string {
	if right {
		return "def add(a, b):\n    return a + b\n"
	}
	return "def add(a, b):\n    return a - b\n"
}

// historyScript answers the plan and the tool loop's turns of every case.
// An attempt writes the code (wrong while the case still wants failures,
// counted by the attempts finished before), runs a command if the case
// does, runs the tests and finishes.
func historyScript() llmtest.Script {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		var text strings.Builder
		for _, m := range req.Messages {
			text.WriteString(m.Content + "\n")
		}
		m := historyCaseRE.FindStringSubmatch(text.String())
		if m == nil {
			return llmtest.Fail("no history case in the prompt")
		}
		i := slices.IndexFunc(historyCases, func(hc historyCase) bool { return hc.name == m[1] })
		if i < 0 {
			return llmtest.Fail("unknown history case %q", m[1])
		}
		hc := historyCases[i]
		if len(req.Tools) == 0 {
			if strings.Contains(req.LastUser(), planMarker) {
				return llmtest.Reply{Content: "1. Implement add in calc.py with a pytest test in test_calc.py."}
			}
			return llmtest.Fail("a request without tools that is not the plan")
		}
		finished := 0
		for _, m := range req.Messages {
			for _, c := range m.ToolCalls {
				if c.Name == "finish" {
					finished++
				}
			}
		}
		var calls []llmtest.ToolCall
		call := func(name string, args map[string]any) llmtest.ToolCall {
			raw, _ := json.Marshal(args) // plain maps always encode
			// Unique in the conversation: its position and the call's index.
			return llmtest.ToolCall{ID: fmt.Sprintf("call_%d_%d", len(req.Messages), len(calls)), Name: name, Arguments: string(raw)}
		}
		if hc.mcp && prevCall(req) == "" {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("mcp__docs__lookup", map[string]any{"query": "add"})}}
		}
		if hc.install && prevCall(req) == "" {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("install", map[string]any{"packages": []string{historyPackage + "==1.0"}})}}
		}
		switch prevCall(req) {
		case "", "finish", "mcp__docs__lookup", "install":
			code := historyCode(finished >= hc.failures)
			if hc.socket {
				code = "import socket  # checks the host name\n\n" + code
			}
			calls = append(calls, call("write", map[string]any{"path": "calc.py", "content": code}))
			switch {
			case hc.tamper:
				calls = append(calls, call("edit", map[string]any{"path": "test_calc.py", "old_text": "== 5", "new_text": "is not None"}))
			case finished == 0:
				calls = append(calls, call("write", map[string]any{"path": "test_calc.py", "content": historyTest}))
			}
		case "write", "edit":
			if hc.command {
				calls = append(calls, call("run", map[string]any{"command": "python3 -c 'import calc; print(calc.add(2, 3))'"}))
				break
			}
			calls = append(calls, call("run_tests", map[string]any{}))
		case "run":
			calls = append(calls, call("run_tests", map[string]any{}))
		case "run_tests":
			calls = append(calls, call("finish", map[string]any{"summary": "add is written and tested."}))
		default:
			return llmtest.Fail("no turn scripted after %s", prevCall(req))
		}
		return llmtest.Reply{ToolCalls: calls, Delay: hc.slow}
	}
}

// awaitStatus polls a task's status until cond holds or the task is over;
// it reports whether cond held.
func awaitStatus(ctx context.Context, t *testing.T, tc *taskclient.Client, id string, cond func(workflows.Status) bool) (workflows.Status, bool) {
	t.Helper()
	for {
		st, err := tc.Status(ctx, id)
		if err == nil && cond(st) {
			return st, true
		}
		if err == nil && st.Phase.Done() {
			return st, false
		}
		d, derr := tc.Describe(ctx, id)
		if derr == nil && d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING &&
			d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
			return st, false
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s: %v (last status %+v, error %v)", id, ctx.Err(), st, err)
		case <-time.After(150 * time.Millisecond):
		}
	}
}

// answerGates approves every question of the given kind until the task
// ends, and fails the test if it never asked one.
func answerGates(kind string) func(ctx context.Context, t *testing.T, tc *taskclient.Client, id string) {
	return func(ctx context.Context, t *testing.T, tc *taskclient.Client, id string) {
		asked := 0
		for {
			st, ok := awaitStatus(ctx, t, tc, id, func(st workflows.Status) bool { return st.Pending != nil })
			if !ok {
				break
			}
			if st.Pending.Kind != kind {
				t.Fatalf("task %s asks a %s question, want %s: %s", id, st.Pending.Kind, kind, st.Pending.Question)
			}
			asked++
			approve(ctx, t, tc, id, *st.Pending)
		}
		if asked == 0 {
			t.Fatalf("task %s never asked a %s question", id, kind)
		}
	}
}

// approve answers the pending question yes and waits until the task has
// taken the answer.
func approve(ctx context.Context, t *testing.T, tc *taskclient.Client, id string, q workflows.Approval) {
	t.Helper()
	if err := tc.Approve(ctx, id, workflows.ApproveSignal{Comment: "approved"}); err != nil {
		t.Fatal(err)
	}
	awaitStatus(ctx, t, tc, id, func(st workflows.Status) bool { return st.Pending == nil || !st.Pending.Since.Equal(q.Since) })
}

// rollBack waits for the stuck question, moves the task back to its
// first checkpoint with guidance, and approves any later stuck question.
func rollBack(ctx context.Context, t *testing.T, tc *taskclient.Client, id string) {
	if _, ok := awaitStatus(ctx, t, tc, id, func(st workflows.Status) bool {
		return st.Pending != nil && st.Pending.Kind == workflows.GateStuck
	}); !ok {
		t.Fatalf("task %s never got stuck", id)
	}
	if _, err := tc.Rollback(ctx, id, workflows.RollbackRequest{Checkpoint: 1, Feedback: "add must add, not subtract"}); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	for {
		st, ok := awaitStatus(ctx, t, tc, id, func(st workflows.Status) bool { return st.Pending != nil })
		if !ok {
			return
		}
		approve(ctx, t, tc, id, *st.Pending)
	}
}

// cancelAtPlan cancels the task while it waits for its plan's approval.
func cancelAtPlan(ctx context.Context, t *testing.T, tc *taskclient.Client, id string) {
	if _, ok := awaitStatus(ctx, t, tc, id, func(st workflows.Status) bool {
		return st.Pending != nil && st.Pending.Kind == workflows.GatePlan
	}); !ok {
		t.Fatalf("task %s never asked for its plan's approval", id)
	}
	if err := tc.Cancel(ctx, id, workflows.CancelSignal{Reason: "recorded cancel"}); err != nil {
		t.Fatal(err)
	}
}

// guideMidAttempt sends guidance while the model works on its first turn,
// for the workflow to pass on before the next.
func guideMidAttempt(ctx context.Context, t *testing.T, tc *taskclient.Client, id string) {
	if _, ok := awaitStatus(ctx, t, tc, id, func(st workflows.Status) bool { return st.Turn >= 1 }); !ok {
		t.Fatalf("task %s never reached a model turn", id)
	}
	if err := tc.Feedback(ctx, id, workflows.FeedbackSignal{Text: "keep add free of side effects"}); err != nil {
		t.Fatal(err)
	}
}

// feedbackAcrossRuns sends guidance every few hundred milliseconds while
// the task hops across runs, so signals arrive as a run continues as new;
// every one must reach the task's status.
func feedbackAcrossRuns(ctx context.Context, t *testing.T, tc *taskclient.Client, id string) {
	var sent []string
	for n := 1; ; n++ {
		st, err := tc.Status(ctx, id)
		if err == nil && st.Phase.Done() {
			break
		}
		text := fmt.Sprintf("guidance %d", n)
		if err := tc.Feedback(ctx, id, workflows.FeedbackSignal{Text: text}); err != nil {
			if d, derr := tc.Describe(ctx, id); derr == nil &&
				d.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
				break // the task ended between the query and the signal
			}
			t.Fatal(err)
		}
		sent = append(sent, text)
		time.Sleep(20 * time.Millisecond)
	}
	res, err := tc.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status.Runs < 2 {
		t.Errorf("task used %d runs; want it to continue as new", res.Status.Runs)
	}
	carried, atContinue := signalsCarried(ctx, t, tc, id)
	for _, s := range carried {
		if !slices.Contains(res.Status.Feedback, s) {
			t.Errorf("feedback %q, received by a run that continued as new, was lost (the task kept %d of %d sent)", s, len(res.Status.Feedback), len(sent))
		}
	}
	if !atContinue {
		t.Errorf("no run of %s continued as new with a signal in its last workflow task; record again", id)
	}
	t.Logf("%d feedback signals sent, %d received by runs that continued as new, %d in the result", len(sent), len(carried), len(res.Status.Feedback))
}

// signalsCarried returns the feedback received by the runs of a task that
// continued as new, which the next run must carry, and reports whether
// some run continued as new in a workflow task that also delivered a
// signal, which it must drain first.
func signalsCarried(ctx context.Context, t *testing.T, tc *taskclient.Client, id string) ([]string, bool) {
	t.Helper()
	runs, err := tc.RunHistories(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var carried []string
	atContinue := false
	for _, events := range runs {
		// pending: signals since the last completed workflow task;
		// delivered: those the last completed one received.
		continued, pending, delivered := false, false, false
		var texts []string
		for _, ev := range events {
			switch ev.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				delivered, pending = pending, false
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				pending = true
				var fb workflows.FeedbackSignal
				if p := ev.GetWorkflowExecutionSignaledEventAttributes().GetInput().GetPayloads(); len(p) > 0 && json.Unmarshal(p[0].GetData(), &fb) == nil {
					texts = append(texts, fb.Text)
				}
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
				continued = true
			}
		}
		if continued {
			carried = append(carried, texts...)
			atContinue = atContinue || delivered
		}
	}
	return carried, atContinue
}

// recordRuns writes the history of each run of a task, following its
// continue-as-new chain from the first run.
func recordRuns(ctx context.Context, t *testing.T, tc *taskclient.Client, id, dir, name string) {
	t.Helper()
	// A case recorded before with more runs leaves no stale run behind.
	stale, err := filepath.Glob(filepath.Join(dir, name+"_run*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := tc.RunHistories(ctx, id)
	if err != nil {
		t.Fatalf("read history: %v", err)
	}
	for n, events := range runs {
		hist := &historypb.History{Events: events}
		data, err := temporalproto.CustomJSONMarshalOptions{}.Marshal(hist)
		if err != nil {
			t.Fatalf("encode history: %v", err)
		}
		file := name + ".json"
		if len(runs) > 1 {
			file = fmt.Sprintf("%s_run%d.json", name, n+1)
		}
		path := filepath.Join(dir, file)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatalf("write history: %v", err)
		}
		t.Logf("recorded %d events (%d KiB) to %s", len(hist.Events), len(data)>>10, path)
	}
}
