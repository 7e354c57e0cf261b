package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/mcptools/mcptest"
	"github.com/autocoder/autocoder/workflows"
)

// TestModelCallsAnMCPToolOnceAcrossAWorkerKill: a server in the user's
// [[mcp_servers]] is offered to the model (its allowed tool only); the
// model looks a word up, and the worker is SIGKILLed while the model
// answers the turn after the call. A new worker finishes the task, the
// transcript holds the call and its result, and the server's own log
// shows the call ran exactly once.
func TestModelCallsAnMCPToolOnceAcrossAWorkerKill(t *testing.T) {
	t.Parallel()
	requireBackend(t, "bwrap")
	started := time.Now()
	server := mcptest.LookupServer(t)
	callLog := filepath.Join(t.TempDir(), "calls.log")
	home := t.TempDir()
	file := filepath.Join(home, "autocoder", "config.toml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	text := "[[mcp_servers]]\nname = \"docs\"\ncommand = \"" + server + "\"\nargs = [\"" + callLog + "\"]\ntools = [\"lookup\"]\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}

	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	var p problems
	script := agent(func(v turnView) llmtest.Reply {
		switch v.turn() {
		case 0:
			if !slices.Contains(v.tools, "mcp__docs__lookup") || slices.Contains(v.tools, "mcp__docs__environ") {
				return p.fail("tools offered: %v; want mcp__docs__lookup and no other of the server's", v.tools)
			}
			return calls(v, "", call("mcp__docs__lookup", map[string]any{"query": "add"}))
		case 1:
			if res := v.lastResults(); len(res) != 1 || !strings.HasPrefix(res[0], "docs for add") {
				return p.fail("the lookup's result: %q", res)
			}
			holdOnce.Do(func() {
				close(held)
				<-release // the worker dies while the model answers
			})
			return calls(v, "",
				call("write", map[string]any{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
				call("write", map[string]any{"path": "test_calc.py", "content": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}))
		case 2:
			return calls(v, "", call("finish", map[string]any{"summary": "add written, as the docs say."}))
		}
		return p.fail("unexpected turn %d", v.turn())
	})
	c := newCluster(t, func(req llmtest.ChatRequest) llmtest.Reply {
		return script.answer("1. Write add in calc.py with its test.", chatView(req))
	}, "AUTOCODER_SANDBOX=bwrap", "XDG_CONFIG_HOME="+home)
	defer p.report(t)

	ready := time.Now()
	id := c.start("--lang", "python", "Write add(a, b) in calc.py, with a pytest test; look up how in the docs.")
	select {
	case <-held:
	case <-time.After(time.Minute):
		close(release)
		t.Fatalf("the model was never asked after the lookup; status: %+v", c.status(id))
	}
	if n := mcptest.Calls(t, callLog); n != 1 {
		t.Errorf("before the kill the server logged %d lookups, want 1", n)
	}
	killed := time.Now()
	if err := c.workers.Current().Kill(); err != nil {
		t.Fatal(err)
	}
	close(release)
	c.startWorker()
	c.waitFor(id, "success", phase(workflows.PhaseSucceeded))
	t.Logf("setup %s, task to the kill %s, recovery after it %s", ready.Sub(started).Round(time.Millisecond),
		killed.Sub(ready).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	if n := mcptest.Calls(t, callLog); n != 1 {
		t.Errorf("the server logged %d lookups, want exactly 1", n)
	}
	transcript := c.mustCLI("transcript", id)
	if !strings.Contains(transcript, "mcp__docs__lookup") || !strings.Contains(transcript, "docs for add") {
		t.Errorf("the transcript does not show the call and its result:\n%s", transcript)
	}
}
