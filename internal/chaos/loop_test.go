package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// The tool loop's scripted attempt: write the code and its tests in one
// turn of two calls, run a slow command, run the tests, finish. Each turn
// is chosen by the calls the previous one made, which stay in every
// request even when older turns are summarized.
const (
	toolWrite    = "write"
	toolRun      = "run"
	toolRunTests = "run_tests"
	toolFinish   = "finish"
	// summaryMarker is in the request that asks for a summary of older
	// turns (activities' summarize prompt).
	summaryMarker = "summar"
	// slowRun is how long the scripted `run` command takes in the sandbox.
	slowRun = 5 * time.Second
)

// loopStep is the next turn of the scripted attempt after the turn whose
// last call was last ("" before any).
func loopStep(n int, last string) ([]llmtest.ToolCall, string) {
	files := wantFiles(n)
	calc, test := fmt.Sprintf("calc_%d.py", n), fmt.Sprintf("test_calc_%d.py", n)
	args := func(v map[string]any) string {
		b, _ := json.Marshal(v) // plain maps always encode
		return string(b)
	}
	switch last {
	case "":
		return []llmtest.ToolCall{
			{ID: "call_write_code", Name: toolWrite, Arguments: args(map[string]any{"path": calc, "content": files[calc]})},
			{ID: "call_write_test", Name: toolWrite, Arguments: args(map[string]any{"path": test, "content": files[test]})},
		}, "I will write the function and its test. " + strings.Repeat("Thinking about what add should do with its two numbers. ", 180)
	case toolWrite:
		// The command's output and the thinking before it are each a few
		// thousand tokens: with a small context budget the conversation
		// outgrows it on the next turn, and fits again once summarized.
		cmd := fmt.Sprintf("sleep %d && python3 -c 'import calc_%d; print(calc_%d.add(2, 3)); print(\"output line\\n\" * 500)'",
			int(slowRun.Seconds()), n, n)
		return []llmtest.ToolCall{{ID: "call_run", Name: toolRun, Arguments: args(map[string]any{"command": cmd})}}, ""
	case toolRun:
		return []llmtest.ToolCall{{ID: "call_tests", Name: toolRunTests, Arguments: "{}"}}, ""
	case toolRunTests:
		return []llmtest.ToolCall{{ID: "call_finish", Name: toolFinish, Arguments: args(map[string]any{"summary": "add returns the sum; its test passes."})}}, ""
	}
	return nil, ""
}

// lastCall is the name of the last tool call of the request's last
// assistant message or, when a summary stands for the turns that made
// it, the one the summary names; "" when there is none.
func lastCall(req llmtest.ChatRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			return m.ToolCalls[len(m.ToolCalls)-1].Name
		}
		if s := summaryLastRE.FindStringSubmatch(m.Content); s != nil {
			return s[1]
		}
	}
	return ""
}

var (
	summaryCallRE = regexp.MustCompile(`\[call (\w+) `)      // a call quoted in a summary's request
	summaryLastRE = regexp.MustCompile(`Last call: (\w+)\.`) // the scripted summary's words
)

// holdFirst marks the first request a predicate picks and holds its
// answer back for a minute, long enough for the test to kill the worker
// while the model is still answering; later requests are not held.
type holdFirst struct {
	mu   sync.Mutex
	held bool
	at   chan struct{} // closed when the held request arrives
}

func newHoldFirst() *holdFirst { return &holdFirst{at: make(chan struct{})} }

// hold reports whether this request is the one to hold.
func (h *holdFirst) hold() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held {
		return false
	}
	h.held = true
	close(h.at)
	return true
}

// wait waits for the held request.
func (h *holdFirst) wait(ctx context.Context, t *testing.T, what string) {
	t.Helper()
	select {
	case <-h.at:
	case <-ctx.Done():
		t.Fatalf("%s never reached the model", what)
	}
}

// loopScript answers the plan, the tool loop's turns and summaries of
// numbered tasks. holdTurn picks the turn (by the call before it) whose
// streamed answer is held, and holdSummary holds the first summary.
func loopScript(holdTurn string, turn, summary *holdFirst) llmtest.Script {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		if len(req.Tools) == 0 && strings.Contains(strings.ToLower(req.System()+req.LastUser()), summaryMarker) &&
			!strings.Contains(req.LastUser(), planMarker) {
			// The summary's request quotes the turns, not the task; the
			// summary names the last call so the next turn goes on from it.
			calls := summaryCallRE.FindAllStringSubmatch(req.LastUser(), -1)
			if len(calls) == 0 {
				return llmtest.Fail("a summary of no calls: %.200q", req.LastUser())
			}
			r := llmtest.Reply{Content: "The function and its test are written. Last call: " + calls[len(calls)-1][1] + "."}
			if summary != nil && summary.hold() {
				r.Delay = time.Minute
			}
			return r
		}
		m := taskRE.FindStringSubmatch(req.LastUser() + "\n" + firstUser(req))
		if m == nil {
			return llmtest.Fail("no chaos task number in the prompt")
		}
		n, _ := strconv.Atoi(m[1])
		if len(req.Tools) == 0 {
			if strings.Contains(req.LastUser(), planMarker) {
				return llmtest.Reply{Content: fmt.Sprintf("1. Implement add in calc_%d.py with a pytest test.", n)}
			}
			return llmtest.Fail("a request without tools that is neither a plan nor a summary: %.80q", req.LastUser())
		}
		prev := lastCall(req)
		calls, text := loopStep(n, prev)
		if calls == nil {
			return llmtest.Fail("no turn scripted after %s", prev)
		}
		r := llmtest.Reply{Content: text, ToolCalls: calls}
		if turn != nil && prev == holdTurn && turn.hold() {
			r.Stall, r.StallAfter = time.Minute, 0
		}
		return r
	}
}

func firstUser(req llmtest.ChatRequest) string {
	for _, m := range req.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// TestChaosKillToolLoop kills the worker process with SIGKILL during each
// kind of work of the tool loop: a model turn whose streamed answer the
// model holds, a sandbox `run` that takes seconds, and a summary of older
// turns that a small context budget forces. After each kill a new worker
// starts on the same data dir; the task must finish with the right files,
// its conversation must hold every turn exactly once with one result per
// call in order, and the model may see at most one repeated request for
// the kill.
func TestChaosKillToolLoop(t *testing.T) {
	requireDocker(t)
	bin := testenv.Binary(t)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()

	t.Run("model turn", func(t *testing.T) {
		turn := newHoldFirst()
		runLoopKill(t, bin, ts, c, 1, "ModelTurn", loopScript(toolRun, turn, nil), workflows.AgentLimits{},
			func(ctx context.Context, t *testing.T, _ string) { turn.wait(ctx, t, "the held model turn") })
	})
	t.Run("sandbox run", func(t *testing.T) {
		runLoopKill(t, bin, ts, c, 2, "SandboxCall", loopScript("", nil, nil), workflows.AgentLimits{},
			func(ctx context.Context, t *testing.T, id string) {
				waitActivity(ctx, t, c, id, "SandboxCall")
				time.Sleep(slowRun / 3) // the command is running
			})
	})
	t.Run("summarization", func(t *testing.T) {
		summary := newHoldFirst()
		runLoopKill(t, bin, ts, c, 3, "Summarize", loopScript("", nil, summary), workflows.AgentLimits{ContextTokens: summaryContextTokens},
			func(ctx context.Context, t *testing.T, _ string) { summary.wait(ctx, t, "the summary request") })
	})
}

// summaryContextTokens is a context budget the first turns fit in and the
// conversation outgrows once the code is written, so the next turn needs
// a summary of the older ones.
const summaryContextTokens = 2500

// runLoopKill runs task n on a fleet of worker processes, calls await to
// wait for the moment to kill, kills the worker, starts another, and
// checks the finished task's files, conversation and model calls, and
// that the activity of type hit, cut by the kill, completed on a retry.
func runLoopKill(t *testing.T, bin string, ts *temporaltest.TestServer, c client.Client, n int, hit string, script llmtest.Script,
	limits workflows.AgentLimits, await func(ctx context.Context, t *testing.T, id string)) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	began := time.Now()
	model := newModelServer(t, script)
	dataDir := t.TempDir()
	workers := testenv.NewFleet(t, bin, workerEnv(ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), dataDir, model.URL()),
		"--sandbox-slots", "1", "--sandbox-pool", "1")
	first := workers.Start()

	id := fmt.Sprintf("chaos-loop-%d-%d", n, time.Now().UnixNano())
	_, err := tasks(c).Start(ctx, workflows.TaskInput{Task: taskText(n), Language: "python", MaxIterations: 2, Agent: limits},
		taskclient.StartOptions{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	await(ctx, t, id)
	k := kill{At: time.Now()}
	if err := first.Kill(); err != nil {
		t.Fatal(err)
	}
	k.Restart = time.Now()
	workers.Start()
	res, err := waitDone(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := workers.StopAll(time.Minute); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	h, err := loadHistory(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(h.Activities, func(a activityRun) bool {
		return a.Type == hit && a.Scheduled.Before(k.At) && a.Started.After(k.Restart) && a.Attempt > 1
	}) {
		t.Errorf("no %s activity cut by the kill completed on a retry", hit)
	}

	st, err := store.OpenSQLite(ctx, filepath.Join(dataDir, "autocoder.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	if err := checkSnapshot(ctx, st, n, res.SnapshotID); err != nil {
		t.Error(err)
	}
	if len(res.Status.Transcripts) != 1 {
		t.Fatalf("task has transcripts %+v, want one for its one step", res.Status.Transcripts)
	}
	msgs := readTranscript(ctx, t, st, res.Status.Transcripts[0].ID)
	if err := checkConversation(msgs); err != nil {
		t.Error(err)
	}
	checkRepeats(t, model.Calls(), []kill{k})
	t.Logf("task %s done %s after its start, %s after the restart; %d messages in its transcript, %d model calls",
		id, time.Since(began).Round(time.Millisecond), time.Since(k.Restart).Round(time.Millisecond), len(msgs), len(model.Calls()))
}

// waitActivity waits until the task runs an activity of the given type.
func waitActivity(ctx context.Context, t *testing.T, c client.Client, id, activity string) {
	t.Helper()
	for {
		types, err := pendingStarted(ctx, c, id, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(types, activity) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s never ran %s", id, activity)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readTranscript(ctx context.Context, t *testing.T, st store.Store, id string) []llm.Message {
	t.Helper()
	entries, err := st.Transcript(ctx, id)
	if err != nil {
		t.Fatalf("read transcript %s: %v", id, err)
	}
	msgs := make([]llm.Message, len(entries))
	for i, e := range entries {
		if err := json.Unmarshal(e.Data, &msgs[i]); err != nil {
			t.Fatalf("transcript %s entry %d: %v", id, i, err)
		}
	}
	return msgs
}

// checkConversation checks that a conversation holds the scripted
// attempt's turns once each, in order, and that every call of a turn is
// answered by exactly one tool result, in the order of the calls, before
// anything else is said. The store keeps positions contiguous; this is
// what a duplicated or lost turn or result would break.
func checkConversation(msgs []llm.Message) error {
	var turns []string
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == llm.RoleTool {
			return fmt.Errorf("message %d is a tool result no call asked for (%+v)", i, m.Result)
		}
		if m.Role != llm.RoleAssistant {
			continue
		}
		var names []string
		for _, call := range m.ToolCalls {
			names = append(names, call.Name)
			i++
			last := i == len(msgs) && call.Name == toolFinish
			if last {
				break // finish ends the attempt; its result may never be written
			}
			if i >= len(msgs) || msgs[i].Role != llm.RoleTool || msgs[i].Result == nil || msgs[i].Result.CallID != call.ID {
				return fmt.Errorf("message %d: call %s (%s) is not answered by the next message: %s", i, call.ID, call.Name, describe(msgs, i))
			}
		}
		turns = append(turns, strings.Join(names, "+"))
	}
	want := []string{"write+write", toolRun, toolRunTests, toolFinish}
	if !slices.Equal(turns, want) {
		return fmt.Errorf("the conversation's turns are %v, want %v", turns, want)
	}
	return nil
}

func describe(msgs []llm.Message, i int) string {
	if i >= len(msgs) {
		return "the conversation ends"
	}
	m := msgs[i]
	if m.Result != nil {
		return fmt.Sprintf("a %s message answering %s", m.Role, m.Result.CallID)
	}
	return fmt.Sprintf("a %s message %.60q", m.Role, m.Text)
}
