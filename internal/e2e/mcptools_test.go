package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/mcptools/mcptest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/workflows"
)

// docsServer is the test MCP server (mcptest's lookupserver, a real
// process over stdio) named "docs" in the user's configuration, with its
// lookup tool allowed.
type docsServer struct {
	calls string // the server's own log: a line per lookup it ran
	gate  string // when set, a lookup is answered only once this file exists
	env   string // XDG_CONFIG_HOME of the configuration naming the server
}

func newDocsServer(t *testing.T, gated bool) docsServer {
	t.Helper()
	dir, home := t.TempDir(), t.TempDir()
	s := docsServer{calls: filepath.Join(dir, "calls.log"), env: "XDG_CONFIG_HOME=" + home}
	args := `"` + s.calls + `"`
	if gated {
		s.gate = filepath.Join(dir, "answer")
		args += `, "` + s.gate + `"`
	}
	file := filepath.Join(home, "autocoder", "config.toml")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	text := "[[mcp_servers]]\nname = \"docs\"\ncommand = \"" + mcptest.LookupServer(t) + "\"\nargs = [" + args + "]\ntools = [\"lookup\"]\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitForCall returns once the server has logged a lookup.
func (s docsServer) waitForCall(t *testing.T, c *cluster, id string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); mcptest.Calls(t, s.calls) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never logged the lookup; status: %+v", c.status(id))
		}
	}
}

// answer lets a gated server answer.
func (s docsServer) answer(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(s.gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// lookupTask is the task of these tests, and lookupCallID the id the
// model gives its lookup, the first call of the first turn.
const (
	lookupTask   = "Write add(a, b) in calc.py, with a pytest test; look up how in the docs."
	lookupCallID = "call_0_0"
)

// lookupModel is the scripted model of these tests: it looks add up in
// the docs, writes add and its test as they say, and finishes. answering,
// when set, runs while the model answers the turn after the lookup.
func lookupModel(p *problems, answering func()) llmtest.Script {
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
			if answering != nil {
				answering()
			}
			return calls(v, "",
				call("write", map[string]any{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
				call("write", map[string]any{"path": "test_calc.py", "content": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}))
		case 2:
			return calls(v, "", call("finish", map[string]any{"summary": "add written, as the docs say."}))
		}
		return p.fail("unexpected turn %d", v.turn())
	})
	return func(req llmtest.ChatRequest) llmtest.Reply {
		return script.answer("1. Write add in calc.py with its test.", chatView(req))
	}
}

// checkCalledOnce checks, after the task succeeded, that the server ran
// the lookup exactly once and the transcript shows the call and its result.
func (s docsServer) checkCalledOnce(t *testing.T, c *cluster, id string) {
	t.Helper()
	if n := mcptest.Calls(t, s.calls); n != 1 {
		t.Errorf("the server logged %d lookups, want exactly 1", n)
	}
	transcript := c.mustCLI("transcript", id)
	if !strings.Contains(transcript, "mcp__docs__lookup") || !strings.Contains(transcript, "docs for add") {
		t.Errorf("the transcript does not show the call and its result:\n%s", transcript)
	}
}

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
	server := newDocsServer(t, false)
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	var p problems
	hold := func() {
		holdOnce.Do(func() {
			close(held)
			<-release // the worker dies while the model answers
		})
	}
	c := newCluster(t, lookupModel(&p, hold), "AUTOCODER_SANDBOX=bwrap", server.env)
	defer p.report(t)

	ready := time.Now()
	id := c.start("--lang", "python", lookupTask)
	select {
	case <-held:
	case <-time.After(time.Minute):
		close(release)
		t.Fatalf("the model was never asked after the lookup; status: %+v", c.status(id))
	}
	if n := mcptest.Calls(t, server.calls); n != 1 {
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
	server.checkCalledOnce(t, c, id)
}

// TestModelCallsAnMCPToolOnceAcrossAKillInsideTheCall: the worker is
// SIGKILLed inside the MCPCall activity, after the server ran the lookup
// and its outcome was kept, before the result reached the transcript or
// the activity's completion reached Temporal. That is where only the memo
// stands between a retry and a second call. The store is Postgres, so the
// test can hold the worker there without touching it: it locks the
// transcript table while the server, gated, has logged the call but not
// answered, then lets the server answer; the worker keeps the memo and
// waits on the lock. Once the memo is readable the worker is killed, the
// lock let go and a new worker started. The task succeeds, the transcript
// shows the call and its result, and the server's own log shows one call.
func TestModelCallsAnMCPToolOnceAcrossAKillInsideTheCall(t *testing.T) {
	t.Parallel()
	requireBackend(t, "bwrap")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	started := time.Now()
	server := newDocsServer(t, true)
	dbURL := freshDatabase(t)
	var p problems
	c := newCluster(t, lookupModel(&p, nil), "AUTOCODER_SANDBOX=bwrap", "AUTOCODER_DATABASE_URL="+dbURL, server.env)
	defer p.report(t)
	st, err := store.OpenPostgres(ctx, dbURL)
	if err != nil {
		t.Fatalf("open the worker's store: %v", err)
	}
	defer st.Close()

	ready := time.Now()
	id := c.start("--lang", "python", lookupTask)
	server.waitForCall(t, c, id)
	called := time.Now()
	call := lookupCall(ctx, t, c, st, id)

	lock, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(context.Background())
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	// EXCLUSIVE lets the worker read the transcript and write the memo,
	// but not append the call's result.
	if _, err := tx.Exec(ctx, "LOCK TABLE transcript_entries IN EXCLUSIVE MODE"); err != nil {
		t.Fatalf("lock the transcripts: %v", err)
	}
	server.answer(t)
	waitForMemo(ctx, t, st, call.MemoKey())
	kept := time.Now()
	if err := c.workers.Current().Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if n := transcriptLength(ctx, t, st, call.Transcript); n != call.Position {
		t.Fatalf("the transcript has %d messages at the kill, want %d: the result was stored before it", n, call.Position)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("let go of the lock: %v", err)
	}
	c.startWorker()
	c.waitFor(id, "success", phase(workflows.PhaseSucceeded))
	t.Logf("setup %s, task to the lookup %s, lookup to its memo %s, memo to the dead worker %s, recovery after the kill %s",
		ready.Sub(started).Round(time.Millisecond), called.Sub(ready).Round(time.Millisecond),
		kept.Sub(called).Round(time.Millisecond), killed.Sub(kept).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	server.checkCalledOnce(t, c, id)
}

// lookupCall is the MCPCall input of the task's lookup, once the call is
// under way: its result goes at the end of the step's transcript.
func lookupCall(ctx context.Context, t *testing.T, c *cluster, st store.Store, id string) activities.MCPCallInput {
	t.Helper()
	refs := c.status(id).Transcripts
	if len(refs) == 0 {
		t.Fatalf("task %s names no transcript during its first call", id)
	}
	tr := refs[len(refs)-1].ID
	return activities.MCPCallInput{Transcript: tr, Position: transcriptLength(ctx, t, st, tr), CallID: lookupCallID}
}

func transcriptLength(ctx context.Context, t *testing.T, st store.Store, id string) int {
	t.Helper()
	entries, err := st.Transcript(ctx, id)
	if err != nil {
		t.Fatalf("read transcript %s: %v", id, err)
	}
	return len(entries)
}

// waitForMemo returns once the store holds a memo at key.
func waitForMemo(ctx context.Context, t *testing.T, st store.Store, key string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		_, err := st.GetMemo(ctx, key)
		switch {
		case err == nil:
			return
		case !errors.Is(err, store.ErrNotFound):
			t.Fatalf("read memo: %v", err)
		case time.Now().After(deadline):
			t.Fatalf("the call's outcome was never kept (memo %s)", key)
		}
	}
}
