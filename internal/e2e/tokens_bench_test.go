package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/repogen"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
	"github.com/autocoder/autocoder/workflows"
)

// wholeWindowModel is a model without native tool calling: the workflow
// falls back to one fenced-block prompt per attempt, holding as much of
// the project as its window takes.
const wholeWindowModel = "openai:gpt-3.5-turbo-instruct"

// wholeWindowAttempts bounds the whole-window run: a task it has not
// solved by then counts as unsolved.
const wholeWindowAttempts = 4

// BenchmarkToolLoopTokens fixes the planted bug of the generated repository
// (over 300 files, 2 MB; the buggy module is not in the whole-window
// prompt's first view) twice on a real Temporal server, worker, sandbox and
// store: through the tool loop, with a scripted model that lists, searches,
// reads, edits, runs the tests and finishes; and through the whole-window
// fenced-block prompt, with a scripted model that writes the fix once the
// buggy line is in its prompt and otherwise says what it cannot see. It
// reports the prompt tokens per solved task of each, counted over the
// requests the model received with the tool definitions included (the
// scripted server's usage figure leaves those out), and their ratio
// (target: at most 1/3). A run that
// does not solve the task within its attempts has spent its tokens on
// nothing: its tokens per solved task are then infinite, and the ratio is
// taken against the tokens it spent, a bound the real ratio is below.
//
//	go test -run '^$' -bench ToolLoopTokens -benchtime 1x ./internal/e2e/
func BenchmarkToolLoopTokens(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sb, st, c := benchServices(ctx, b)
	repo := repogen.Generate(repogen.Options{Seed: 1})
	snap, err := st.PutSnapshot(ctx, repo.Files)
	if err != nil {
		b.Fatal(err)
	}
	in := workflows.TaskInput{
		Task:          "Fix this bug: " + repo.Bug.Symptom,
		Language:      "python",
		TestCmd:       repo.TestCmd,
		InputSnapshot: snap,
	}
	b.Logf("repository: %d files, %d bytes; the bug is in %s (%d bytes)", len(repo.Files), repo.Size(), repo.Bug.Path, fileSize(repo.Files, repo.Bug.Path))

	for range b.N {
		loop := in
		loop.Model, loop.MaxIterations = "openai:gpt-4.1-mini", 2
		tool := solveOnce(ctx, b, st, sb, c, navigatingModel(repo.Bug), loop, repo)
		whole := in
		whole.Model, whole.MaxIterations = wholeWindowModel, wholeWindowAttempts
		window := solveOnce(ctx, b, st, sb, c, windowModel(repo.Bug), whole, repo)
		if !tool.solved {
			b.Fatalf("the tool loop did not solve the task: %s", tool.err)
		}

		b.Logf("prompt tokens per model call: tool loop %v; whole window %v", tool.perCall, window.perCall)
		b.ReportMetric(float64(tool.prompt), "toolloop-prompt-tokens/solved")
		ratio := float64(tool.prompt) / float64(window.prompt)
		if window.solved {
			b.ReportMetric(float64(window.prompt), "wholewindow-prompt-tokens/solved")
		} else {
			b.ReportMetric(math.Inf(1), "wholewindow-prompt-tokens/solved")
			b.ReportMetric(float64(window.prompt), "wholewindow-prompt-tokens-spent")
		}
		b.ReportMetric(ratio, "ratio")
		verdict := "met"
		if ratio > 1.0/3 {
			verdict = "missed"
		}
		fmt.Printf("prompt tokens per solved task: tool loop %d (usage reported %d; %d model calls, %d iterations); "+
			"whole window %s (usage reported %d; %d model calls, %d iterations)\n"+
			"ratio %.3f (target at most 0.333: %s)\n",
			tool.prompt, tool.usage, tool.calls, tool.iterations, window.describe(), window.usage, window.calls, window.iterations, ratio, verdict)
	}
}

// solveRun is the outcome of one task.
type solveRun struct {
	solved     bool
	err        error
	prompt     int // prompt tokens the task spent, solved or not, tool definitions included
	usage      int // prompt tokens as the task's usage counts them (the provider's figure)
	perCall    []int
	calls      int
	iterations int
}

func (r solveRun) describe() string {
	if r.solved {
		return fmt.Sprint(r.prompt)
	}
	return fmt.Sprintf("unsolved after %d prompt tokens (%v)", r.prompt, r.err)
}

// solveOnce runs one task on an in-process worker against a scripted
// model and reports whether the result fixes the bug.
func solveOnce(ctx context.Context, b *testing.B, st store.Store, sb sandbox.Runner, c client.Client, script llmtest.Script, in workflows.TaskInput, repo repogen.Repo) solveRun {
	b.Helper()
	model := llmtest.New(b, script)
	acts := &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(llm.Env{OpenAIKey: "test-key", OpenAIBaseURL: model.URL()})}
	w := worker.New(c, acts, worker.Options{})
	if err := w.Start(); err != nil {
		b.Fatalf("start worker: %v", err)
	}
	defer w.Stop()
	tc := taskClient(c)
	run, err := tc.Start(ctx, in, taskclient.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	res, err := tc.Wait(ctx, run.ID)
	out := solveRun{err: err}
	out.calls, out.prompt = model.Calls(), promptTokens(model.Requests())
	for _, r := range model.Requests() {
		out.perCall = append(out.perCall, promptTokens([]llmtest.ChatRequest{r}))
	}
	if out.err != nil {
		// A failed task's counters are in its last status.
		if st, err := tc.Status(ctx, run.ID); err == nil {
			res.Status = st
		}
	}
	out.usage, out.iterations = res.Status.Usage.PromptTokens, res.Status.Iteration
	if out.err != nil {
		return out
	}
	files, err := st.GetSnapshot(ctx, res.SnapshotID)
	if err != nil {
		b.Fatal(err)
	}
	if got := string(fileData(files, repo.Bug.Path)); !strings.Contains(got, repo.Bug.Fixed) {
		out.err = fmt.Errorf("the task passed but %s does not hold the fix", repo.Bug.Path)
		return out
	}
	out.solved = true
	return out
}

// navigatingModel works through tools as a careful model would, each turn
// chosen by what the last tool results showed it: it lists the package and
// searches for the function at once, reads around the match, edits the
// line and runs the test that covers it, and finishes; the step's check
// then runs the whole suite.
func navigatingModel(bug repogen.Bug) llmtest.Script {
	call := func(id, name string, args map[string]any) llmtest.ToolCall {
		raw, _ := json.Marshal(args) // plain maps always encode
		return llmtest.ToolCall{ID: id, Name: name, Arguments: string(raw)}
	}
	turn := func(calls ...llmtest.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: calls} }
	return func(req llmtest.ChatRequest) llmtest.Reply {
		if len(req.Tools) == 0 {
			if strings.Contains(req.LastUser(), planMarker) {
				return llmtest.Reply{Content: "1. Find the discount computation, fix it, and run the tests."}
			}
			return llmtest.Fail("a request without tools that is not the plan")
		}
		results := map[string]string{}
		for _, m := range req.ToolResults() {
			results[m.ToolCallID] = m.Content
		}
		switch prevCall(req) {
		case "":
			return turn(call("call_list", "list", map[string]any{"pattern": "acme/billing/rules/**"}),
				call("call_search", "search", map[string]any{"pattern": "def " + bug.Symbol + `\(`, "path": "acme/**"}))
		case "search":
			if !strings.Contains(results["call_search"], bug.Path) {
				return llmtest.Fail("the search result does not name %s: %.200q", bug.Path, results["call_search"])
			}
			return turn(call("call_read", "read", map[string]any{"path": bug.Path, "start_line": max(1, bug.Line-8), "end_line": bug.Line + 2}))
		case "read":
			if !strings.Contains(results["call_read"], bug.Buggy) {
				return llmtest.Fail("the read result does not show the line: %.200q", results["call_read"])
			}
			return turn(call("call_edit", "edit", map[string]any{"path": bug.Path, "old_text": bug.Buggy, "new_text": bug.Fixed}),
				call("call_tests", "run_tests", map[string]any{"tests": []string{bug.Test}}))
		case "run_tests":
			if !strings.Contains(results["call_tests"], "passed") || strings.Contains(results["call_tests"], "failed") {
				return llmtest.Fail("the tests do not pass after the fix: %.300q", results["call_tests"])
			}
			return turn(call("call_finish", "finish", map[string]any{"summary": "apply_discount divided by 1000 instead of 100; fixed, the tests pass."}))
		}
		return llmtest.Fail("no turn scripted after %s", prevCall(req))
	}
}

// promptTokens counts the prompt tokens of the requests a scripted model
// received as a provider bills them: every message, with a few tokens of
// framing each, and the definitions of the tools on offer, which every
// request of the tool loop carries.
func promptTokens(reqs []llmtest.ChatRequest) int {
	n := 0
	for _, r := range reqs {
		n += 3
		for _, m := range r.Messages {
			n += 3 + llmtest.CountTokens(m.Content)
			for _, c := range m.ToolCalls {
				n += llmtest.CountTokens(c.Name) + llmtest.CountTokens(c.Arguments)
			}
		}
		for _, t := range r.Tools {
			n += llmtest.CountTokens(t.Name) + llmtest.CountTokens(t.Description) + llmtest.CountTokens(string(t.Parameters))
		}
	}
	return n
}

// prevCall is the name of the last call of the request's last assistant
// message, "" when there is none.
func prevCall(req llmtest.ChatRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "assistant" && len(m.ToolCalls) > 0 {
			return m.ToolCalls[len(m.ToolCalls)-1].Name
		}
	}
	return ""
}

// windowModel answers fenced-block prompts as a careful model would: it
// writes the fix once the buggy line is in its prompt; asked to reflect,
// it names the module the failing test imports, if the prompt shows that
// test; otherwise it says what it cannot see and changes nothing.
func windowModel(bug repogen.Bug) llmtest.Script {
	// The one-answer retry asks for a diagnosis first (activities/prompts.go).
	const reflectMarker = "Reflect before the next attempt"
	module := strings.TrimSuffix(strings.ReplaceAll(bug.Path, "/", "."), ".py")
	return func(req llmtest.ChatRequest) llmtest.Reply {
		prompt := req.System() + "\n" + req.LastUser()
		switch {
		case len(req.Tools) > 0:
			return llmtest.Fail("offered tools, which this model cannot call")
		case strings.Contains(prompt, planMarker):
			return llmtest.Reply{Content: "1. Find the discount computation, fix it, and run the tests."}
		case strings.Contains(prompt, reflectMarker):
			if strings.Contains(prompt, "from "+module+" import "+bug.Symbol) {
				return llmtest.Reply{Content: fmt.Sprintf("Root cause: %s in %s computes the discount wrongly; the module was not shown.\n"+
					"Hypothesis: the percentage is scaled wrongly.\nFix: look at %s and correct the formula.", bug.Symbol, bug.Path, bug.Path)}
			}
			return llmtest.Reply{Content: "Root cause: unknown; the code computing discounts was not shown.\nHypothesis: none.\nFix: show the discount code."}
		case strings.Contains(prompt, bug.Buggy):
			return llmtest.Reply{Content: "```path=" + bug.Path + "\n<<<<<<< SEARCH\n    " + bug.Buggy + "\n=======\n    " + bug.Fixed + "\n>>>>>>> REPLACE\n```\n"}
		}
		return llmtest.Reply{Content: "The function that computes discounts is not among the files shown, so I cannot fix it yet."}
	}
}

// benchServices starts, for a benchmark, what services starts for a test.
func benchServices(ctx context.Context, b *testing.B) (sandbox.Runner, store.Store, client.Client) {
	b.Helper()
	sb, err := sandbox.New(ctx, withProfiles(sandbox.Config{}))
	testenv.RequireService(b, "a sandbox backend", err)
	b.Cleanup(func() { sb.Close() })
	st, err := store.OpenSQLite(ctx, b.TempDir()+"/autocoder.db")
	if err != nil {
		b.Fatalf("open store: %v", err)
	}
	b.Cleanup(func() { st.Close() })
	ts := temporaltest.NewServer()
	b.Cleanup(ts.Stop)
	return sb, st, ts.GetDefaultClient()
}

func fileData(files []workspace.File, path string) []byte {
	for _, f := range files {
		if f.Path == path {
			return f.Data
		}
	}
	return nil
}

func fileSize(files []workspace.File, path string) int { return len(fileData(files, path)) }
