package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// geminiView reads a Gemini request as the scripted agents do: its calls
// carry no ids, and the results after them are function responses.
func geminiView(req llmtest.GeminiRequest) turnView {
	v := turnView{stream: req.Stream, bytes: len(req.System)}
	for _, t := range req.Tools {
		v.tools = append(v.tools, t.Name)
	}
	for _, c := range req.Contents {
		var text []string
		var calls []llmtest.ToolCall
		for _, p := range c.Parts {
			switch {
			case p.Call != nil:
				calls = append(calls, *p.Call)
			case p.Response != nil:
				v.bytes += len(p.Response.Output) + len(p.Response.Error)
				v.result(p.Response.Output + p.Response.Error)
			case p.Text != "":
				v.bytes += len(p.Text)
				text = append(text, p.Text)
			}
		}
		if c.Role == "model" {
			v.assistant(calls)
		} else if len(text) > 0 {
			v.user(strings.Join(text, "\n"))
		}
	}
	return v
}

// TestGeminiTaskThroughTheBinary: a task run by the built binary with
// --model gemini:... is planned and worked by a scripted server speaking
// Gemini's generateContent protocol. The first attempt writes a wrong add
// and reads the tests in one turn, then finishes; the user's test fails,
// the failure continues the conversation, and the second attempt fixes add
// and runs the tests in one turn, and finishes. The task succeeds in two
// iterations, every call answered by Gemini, its tokens counted and priced.
func TestGeminiTaskThroughTheBinary(t *testing.T) {
	t.Parallel()
	requireBackend(t, "bwrap")
	const (
		plan  = "1. Write add in calc.py."
		model = "gemini:gemini-2.5-pro"
	)
	var probs problems
	fixer := agent(func(v turnView) llmtest.Reply {
		switch v.turn() {
		case 0:
			return calls(v, "Writing add, then reading the tests.",
				call("write", map[string]any{"path": "calc.py", "content": "def add(a, b):\n    return a - b\n"}),
				call("read", map[string]any{"path": "test_calc.py"}))
		case 1:
			if res := v.lastResults(); len(res) != 2 || !strings.Contains(res[1], "assert add(2, 3) == 5") {
				return probs.fail("the results of write and read are not back in order: %q", res)
			}
			return calls(v, "", call("finish", map[string]any{"summary": "add written."}))
		case 2:
			if !strings.Contains(v.last, "test_add") {
				return probs.fail("the next attempt does not start from the failed test:\n%s", clipText(v.last, 2000))
			}
			return calls(v, "The test wants a sum.",
				call("edit", map[string]any{"path": "calc.py", "old_text": "a - b", "new_text": "a + b"}),
				call("run_tests", map[string]any{}))
		case 3:
			if res := v.lastResults(); len(res) != 2 || !strings.Contains(res[1], "1 passed") {
				return probs.fail("the tests do not pass after the fix: %q", res)
			}
			return calls(v, "", call("finish", map[string]any{"summary": "add adds now."}))
		}
		return probs.unexpected(v)
	})
	srv := llmtest.NewGemini(t, func(req llmtest.GeminiRequest) llmtest.Reply { return fixer.answer(plan, geminiView(req)) })
	c := newCluster(t, func(llmtest.ChatRequest) llmtest.Reply {
		return probs.fail("the OpenAI server was asked, but the task names %s", model)
	}, "AUTOCODER_SANDBOX=bwrap", "GEMINI_API_KEY=test-key", "GEMINI_BASE_URL="+srv.URL())

	proj := t.TempDir()
	writeProject(t, proj, map[string]string{"test_calc.py": calcTest})
	out := c.mustCLI("run", "--dir", proj, "--lang", "python", "--test-cmd", "python3 -m pytest -q", "--json",
		"--model", model, "Write add(a, b) in calc.py.")
	probs.report(t)
	var res struct{ ID string }
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
		t.Fatalf("run --json printed %q: %v", out, err)
	}
	st := c.status(res.ID)
	if st.Phase != workflows.PhaseSucceeded {
		t.Fatalf("the task ended %s: %s", st.Phase, st.Error)
	}
	if st.Iteration != 2 || len(st.Checkpoints) != 2 || st.Checkpoints[0].Passed || !st.Checkpoints[1].Passed {
		t.Errorf("iteration %d, checkpoints %+v; want a failed attempt, then a passing one", st.Iteration, st.Checkpoints)
	}
	if got, err := os.ReadFile(filepath.Join(proj, "calc.py")); err != nil || string(got) != "def add(a, b):\n    return a + b\n" {
		t.Errorf("calc.py = %q, %v; want add fixed", got, err)
	}
	if st.Model != model || len(st.Usage.PerModel) != 1 || st.Usage.PerModel[0].Model != model || st.Usage.PerModel[0].Calls != st.Usage.Calls {
		t.Errorf("answered by %q, tokens per model %+v; want every call answered by %s", st.Model, st.Usage.PerModel, model)
	}
	if u := st.Usage; u.PromptTokens == 0 || u.CompletionTokens == 0 || u.CostUSD <= 0 || u.Unpriced != 0 {
		t.Errorf("usage %+v; want Gemini's tokens counted and priced at its list price", u)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 || c.model.Calls() != 0 {
		t.Errorf("%d Gemini requests (want 5: the plan and four turns), %d OpenAI requests (want none)", len(reqs), c.model.Calls())
	}
	for i, r := range reqs {
		if r.APIKey != "test-key" || r.Model != "gemini-2.5-pro" {
			t.Errorf("request %d: key %q, model %q", i, r.APIKey, r.Model)
		}
	}
}
