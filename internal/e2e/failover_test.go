package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// TestFailoverToTheNextModelAndBack: a task's model (OpenAI's protocol)
// answers every request with HTTP 500; the next model of its chain
// (Anthropic's protocol) answers the same calls, the task succeeds and
// `status` names the switch. Then the first model recovers, and once its
// breaker's cooldown has passed a second task is answered by it alone.
func TestFailoverToTheNextModelAndBack(t *testing.T) {
	t.Parallel()
	requireBackend(t, "bwrap")
	const cooldown = 2 * time.Second
	var probs problems
	writer := agent(func(v turnView) llmtest.Reply {
		switch v.turn() {
		case 0:
			return calls(v, "", call("write", map[string]any{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}))
		case 1:
			return calls(v, "", call("finish", map[string]any{"summary": "add written."}))
		}
		return probs.unexpected(v)
	})
	const plan = "1. Write add in calc.py."
	var down atomic.Bool
	down.Store(true)
	c := newCluster(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if down.Load() {
			return llmtest.Reply{Status: http.StatusInternalServerError, Content: "the primary is down"}
		}
		return writer.answer(plan, chatView(req))
	}, "AUTOCODER_SANDBOX=bwrap", "AUTOCODER_BREAKER_COOLDOWN="+cooldown.String(),
		"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL="+anthropicURL(t, writer, plan))
	const primary, fallback = "openai:gpt-4.1", "anthropic:claude-sonnet-4-5"
	run := func() (string, string) {
		proj := t.TempDir()
		writeProject(t, proj, map[string]string{"test_calc.py": calcTest})
		out := c.mustCLI("run", "--dir", proj, "--lang", "python", "--test-cmd", "python3 -m pytest -q", "--json",
			"--model", primary, "--fallback", fallback, "Write add(a, b) in calc.py.")
		probs.report(t)
		var res struct{ ID string }
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
			t.Fatalf("run --json printed %q: %v", out, err)
		}
		text, _, _ := c.cli("status", res.ID)
		return res.ID, text
	}

	id, text := run()
	st := c.status(id)
	if st.Phase != workflows.PhaseSucceeded {
		t.Fatalf("the task with its primary down ended %s: %s", st.Phase, st.Error)
	}
	if want := "model:     " + fallback + " (fell back from " + primary; !strings.Contains(text, want) {
		t.Errorf("status does not show the switch (%q):\n%s", want, text)
	}
	if len(st.Usage.PerModel) != 1 || st.Usage.PerModel[0].Model != fallback || st.Usage.PerModel[0].Calls != st.Usage.Calls {
		t.Errorf("tokens per model = %+v, want every call answered by %s", st.Usage.PerModel, fallback)
	}
	if !strings.Contains(text, "  "+fallback+": ") {
		t.Errorf("status does not list the fallback's tokens:\n%s", text)
	}
	if _, errOut, code := c.cli("export", id, "--patch"); code != 0 || !strings.Contains(errOut, "  "+fallback+": ") {
		t.Errorf("export --patch (exit %d) does not list the fallback's tokens:\n%s", code, errOut)
	}
	failed := c.model.Calls()
	if failed == 0 {
		t.Fatal("the primary was never asked")
	}

	// The primary recovers; after the cooldown its breaker lets it answer.
	down.Store(false)
	time.Sleep(cooldown + 500*time.Millisecond)
	id, text = run()
	st = c.status(id)
	if st.Phase != workflows.PhaseSucceeded {
		t.Fatalf("the task after the primary recovered ended %s: %s", st.Phase, st.Error)
	}
	if st.Model != primary || st.FellBack != "" || strings.Contains(text, "fell back") {
		t.Errorf("after the cooldown the last turn was answered by %q (fell back from %q), want %s:\n%s", st.Model, st.FellBack, primary, text)
	}
	if len(st.Usage.PerModel) != 1 || st.Usage.PerModel[0].Model != primary {
		t.Errorf("tokens per model = %+v, want every call answered by %s", st.Usage.PerModel, primary)
	}
	if c.model.Calls() == failed {
		t.Error("the recovered primary was not asked again")
	}
}

// anthropicURL serves the same agent over Anthropic's messages protocol.
func anthropicURL(t *testing.T, a agent, plan string) string {
	srv := llmtest.NewAnthropic(t, func(req llmtest.MessagesRequest) llmtest.Reply { return a.answer(plan, messagesView(req)) })
	return srv.URL()
}
