package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/mcptools/mcptest"
)

// serverSettings is the part of the address file that says what the
// server's worker runs tasks with.
type serverSettings struct {
	PID          int
	Settings     map[string]string
	Settingsless bool
}

func (l *local) settings(t *testing.T) serverSettings {
	t.Helper()
	var s serverSettings
	b, err := os.ReadFile(filepath.Join(l.dir, "server.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// bare is env without any model or sandbox setting: a new shell.
func bare(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "AUTOCODER_SANDBOX=") {
			out = append(out, kv)
		}
	}
	return out
}

// with is a copy of env with kv added (the later setting wins).
func with(env []string, kv ...string) []string {
	return append(append([]string(nil), env...), kv...)
}

// exec runs the command with env and returns its stdout, stderr and exit
// code.
func (l *local) exec(ctx context.Context, t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := l.command(ctx, args...)
	cmd.Env = env
	return runCaptured(t, cmd, args)
}

// TestReadOnlyCommandThenRun: after a command that only reads started the
// local server from a shell with no model key, a run from a shell with a
// key and AUTOCODER_SANDBOX=bwrap succeeds, on a server with that shell's
// settings: the first server, settings-less, was replaced.
func TestReadOnlyCommandThenRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	model := llmtest.New(t, sc.script())
	l := newLocal(t, model)

	if _, stderr, code := l.exec(ctx, t, bare(l.env), "list"); code != 0 {
		t.Fatalf("list from a bare shell: exit %d\n%s", code, stderr)
	}
	if s := l.settings(t); !s.Settingsless || len(s.Settings) != 0 {
		t.Errorf("the server a bare list started: %+v, want settings-less", s)
	}
	if out, _, _ := l.exec(ctx, t, bare(l.env), "dev", "status"); !strings.Contains(out, "Settings: none (started by a command that only reads") {
		t.Errorf("dev status of the settings-less server:\n%s", out)
	}

	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.exec(ctx, t, with(l.env, "AUTOCODER_SANDBOX=bwrap"), "run", sc.task, "--out", out)
	if code != 0 || !strings.Contains(stdout, "succeeded") {
		t.Fatalf("run with a key after a bare list: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkFiles(t, sc, readDir(t, out, sc))
	if !strings.Contains(stderr, "the local server was started by a command that only reads: restarting it with this shell's settings") {
		t.Errorf("run did not say it restarted the server:\n%s", stderr)
	}
	s := l.settings(t)
	if s.Settingsless || s.Settings["sandbox.backend"] != "bwrap" || s.Settings["providers.openai.base_url"] != model.URL() {
		t.Errorf("the server run used: %+v, want the run's settings", s)
	}
	if strings.Contains(s.Settings["providers.openai.api_key"], "test-key") {
		t.Errorf("the address file holds the key itself: %+v", s.Settings)
	}
	if out, _, _ := l.exec(ctx, t, bare(l.env), "dev", "status"); !strings.Contains(out, "sandbox.backend=bwrap") {
		t.Errorf("dev status after the run:\n%s", out)
	}
}

// TestOpenTaskWaitsForSettings: the server dies while a task's model call
// is in flight; `status` from a shell with no model key starts a server
// that runs none of the task's activities (the task waits, and status
// says how to go on), and resume from the shell with the key finishes it.
func TestOpenTaskWaitsForSettings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	var calls atomic.Int32
	script := sc.script()
	model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if calls.Add(1) == 1 {
			return llmtest.Reply{Delay: 10 * time.Minute} // the plan call the crash cuts off
		}
		return script(req)
	})
	l := newLocal(t, model, "AUTOCODER_SANDBOX=bwrap")
	out, stderr, code := l.exec(ctx, t, l.env, "run", sc.task, "--detach")
	if code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", code, stderr)
	}
	id := strings.TrimSpace(out)
	for calls.Load() == 0 {
		time.Sleep(100 * time.Millisecond)
	}
	first := l.settings(t)
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}

	status, stderr, code := l.exec(ctx, t, bare(l.env), "status", id)
	want := "note:      the local server was started by a command that only reads and runs no model call or sandbox: " +
		"autocoder resume " + id + " from a shell with your model settings continues the task"
	if code != 0 || !strings.Contains(status, want) {
		t.Errorf("status from a bare shell: exit %d, want 0 and %q\n%s%s", code, want, status, stderr)
	}
	time.Sleep(3 * time.Second) // a worker that took the task's activities would fail it by now
	if status, _, _ := l.exec(ctx, t, bare(l.env), "status", id, "--json"); strings.Contains(status, `"phase": "failed"`) {
		t.Fatalf("the task failed on the server a bare status started:\n%s", status)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d model calls after the crash on the settings-less server, want none", n-1)
	}

	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.exec(ctx, t, l.env, "resume", id, "--out", dir)
	if code != 0 || !strings.Contains(stdout, "succeeded") {
		t.Fatalf("resume with the key: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkFiles(t, sc, readDir(t, dir, sc))
}

// TestBusyServerWithOtherSettings: while the server holds an open task,
// a run from a shell with another model URL starts nothing and says which
// setting differs and what to do.
func TestBusyServerWithOtherSettings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	l := newLocal(t, llmtest.New(t, sc.script()))
	if _, stderr, code := l.exec(ctx, t, l.env, "run", sc.task, "--approve-plan", "--detach"); code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", code, stderr)
	}
	server := l.settings(t)

	other := llmtest.New(t, sc.script())
	_, stderr, code := l.exec(ctx, t, with(l.env, "OPENAI_BASE_URL="+other.URL()), "run", sc.task, "--out", t.TempDir())
	want := "autocoder: the local server runs 1 open task(s) and its providers.openai.base_url differs from this shell's; " +
		"run this when they have ended (autocoder list --status running), or `autocoder dev stop` first"
	if code != 2 || !strings.Contains(stderr, want) || strings.Contains(stderr, "started") {
		t.Fatalf("run with another URL on a busy server: exit %d, want 2 and %q, no task started\n%s", code, want, stderr)
	}
	if n := other.Calls(); n != 0 {
		t.Errorf("the other model got %d calls", n)
	}
	if s := l.settings(t); s.PID != server.PID {
		t.Errorf("the busy server was replaced: pid %d, then %d", server.PID, s.PID)
	}
}

// failingModel answers every request with HTTP 503.
func failingModel(t *testing.T) *llmtest.Server {
	return llmtest.New(t, func(llmtest.ChatRequest) llmtest.Reply {
		return llmtest.Reply{Status: http.StatusServiceUnavailable, Content: "the model is overloaded"}
	})
}

// runFailureGolden is what a piped run prints when every model call fails:
// each failed attempt as it happens, then one line naming the cause.
const runFailureGolden = `language: Python (the task names it; --lang chooses another)
starting the local server for DATA (log: DATA/autocoder.log)…
local server at ADDR, Web UI at UI
task ID started
web UI: UI/namespaces/default/workflows/ID
[planning]
Plan failed: model call: model provider openai failed (HTTP 503), try again later: API returned unexpected status code: 503: the model is overloaded; attempt 2 of 6 in Ns
Plan failed: model call: model provider openai failed (HTTP 503), try again later: API returned unexpected status code: 503: the model is overloaded; attempt 3 of 6 in Ns
Plan failed: model call: model provider openai failed (HTTP 503), try again later: API returned unexpected status code: 503: the model is overloaded; attempt 4 of 6 in Ns
Plan failed: model call: model provider openai failed (HTTP 503), try again later: API returned unexpected status code: 503: the model is overloaded; attempt 5 of 6 in Ns
Plan failed: model call: model provider openai failed (HTTP 503), try again later: API returned unexpected status code: 503: the model is overloaded; attempt 6 of 6 in Ns
[failed]
autocoder: task ID failed: model call: model provider openai failed (HTTP 503), try again later: API returned unexpected status code: 503: the model is overloaded; autocoder status ID shows where it stopped (the whole error: --verbose)
`

// golden replaces what changes from run to run: the task id, addresses,
// the data dir, and the seconds until a retry (an attempt may also be seen
// only once it started).
func golden(s, dataDir string) string {
	for _, r := range []struct{ re, with string }{
		{taskIDPattern, "ID"},
		{regexp.QuoteMeta(dataDir), "DATA"},
		{`http://127\.0\.0\.1:\d+`, "UI"},
		{`127\.0\.0\.1:\d+`, "ADDR"},
		{`; attempt (\d+ of \d+) (in \d+s|started)`, "; attempt $1 in Ns"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.with)
	}
	return s
}

// retryLine is one failed attempt's line of the golden output.
var retryLine = regexp.MustCompile(`(?m)^.* failed: .*; attempt (\d+) of \d+ in Ns\n`)

// matchesRetryGolden compares output with the golden text, except that the
// progress poll of a loaded machine may miss the wait before an attempt:
// each retry line shown must be the golden's line for its attempt, in
// order, the last attempt's line must be there, and at least three shown.
func matchesRetryGolden(t *testing.T, got, want string) bool {
	t.Helper()
	gotLines, wantLines := retryLine.FindAllString(got, -1), retryLine.FindAllString(want, -1)
	if len(gotLines) < 3 || len(wantLines) == 0 || gotLines[len(gotLines)-1] != wantLines[len(wantLines)-1] {
		return false
	}
	next := 0
	for _, g := range gotLines {
		i := slices.Index(wantLines[next:], g)
		if i < 0 {
			return false
		}
		next += i + 1
	}
	return retryLine.ReplaceAllString(got, "") == retryLine.ReplaceAllString(want, "")
}

// TestModelErrorsThenTheRightURL: a run against a model that fails every
// call shows each failed attempt as it happens and ends with one line
// naming the cause (golden output); the next run, with the right model
// URL, restarts the idle server with it and succeeds.
func TestModelErrorsThenTheRightURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	good := llmtest.New(t, sc.script())
	l := newLocal(t, good)
	wrong := with(l.env, "OPENAI_BASE_URL="+failingModel(t).URL())

	stdout, stderr, code := l.exec(ctx, t, wrong, "run", sc.task)
	if got := golden(stderr, l.dir); code != 1 || !matchesRetryGolden(t, got, runFailureGolden) {
		t.Errorf("run against a failing model: exit %d, want 1; stderr (normalized):\n%s\nwant:\n%s", code, got, runFailureGolden)
	}
	if stdout != "" {
		t.Errorf("stdout: %q", stdout)
	}

	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code = l.exec(ctx, t, l.env, "run", sc.task, "--out", out)
	if code != 0 || !strings.Contains(stdout, "succeeded") {
		t.Fatalf("run with the right URL: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkFiles(t, sc, readDir(t, out, sc))
	want := "the local server has no open task and its providers.openai.base_url differs from this shell's: restarting it with this shell's settings"
	if !strings.Contains(stderr, want) {
		t.Errorf("run with the right URL did not say %q:\n%s", want, stderr)
	}
}

// TestRunWithModelFromConfigFile: in a shell with no model setting, the
// model, its URL and its key (a command's output) come only from the
// user's configuration file: run succeeds, the model is called as the
// file says, with the key the command printed in the local server, and
// the server's settings name the file's values.
func TestRunWithModelFromConfigFile(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	model := llmtest.New(t, sc.script())
	l := newLocal(t, model)
	home := t.TempDir()
	file := filepath.Join(home, "autocoder", "config.toml")
	text := "model = \"openai:gpt-4.1-mini\"\n\n[providers.openai]\nbase_url = \"" + model.URL() + "\"\napi_key_cmd = \"echo key-from-cmd\"\n"
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	env := with(bare(l.env), "XDG_CONFIG_HOME="+home)

	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.exec(ctx, t, env, "run", sc.task, "--out", out)
	if code != 0 || !strings.Contains(stdout, "succeeded") {
		t.Fatalf("run with the model in the file: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkFiles(t, sc, readDir(t, out, sc))
	for _, r := range model.Requests() {
		if r.Model != "gpt-4.1-mini" || r.APIKey != "key-from-cmd" {
			t.Errorf("a model call for %q with key %q; want gpt-4.1-mini with key-from-cmd", r.Model, r.APIKey)
		}
	}
	s := l.settings(t)
	if s.Settings["model"] != "openai:gpt-4.1-mini" || s.Settings["providers.openai.base_url"] != model.URL() ||
		s.Settings["providers.openai.api_key_cmd"] != "echo key-from-cmd" {
		t.Errorf("the server's settings: %+v, want the file's", s.Settings)
	}
	show, _, _ := l.exec(ctx, t, env, "config", "show")
	if !strings.Contains(show, "file "+file+":1") || !strings.Contains(show, "file "+file+":4") {
		t.Errorf("config show does not name the file's lines:\n%s", show)
	}
}

// TestConfigEditNeedsNoRestart: while the local server holds an open
// task, the configuration file is edited to name another model URL and
// an MCP server; the server takes both on without a restart, and the next
// run, with the edited file, runs there on the new model.
func TestConfigEditNeedsNoRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	first, second := llmtest.New(t, sc.script()), llmtest.New(t, sc.script())
	l := newLocal(t, first)
	l.env = slices.DeleteFunc(l.env, func(kv string) bool { return strings.HasPrefix(kv, "OPENAI_BASE_URL=") })
	cfg := filepath.Join(t.TempDir(), "config.toml")
	writeConfig := func(url, more string) {
		t.Helper()
		tmp := cfg + ".new"
		if err := os.WriteFile(tmp, []byte("[providers.openai]\nbase_url = \""+url+"\"\n"+more), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg); err != nil { // as editors save
			t.Fatal(err)
		}
	}
	writeConfig(first.URL(), "")
	if _, stderr, code := l.exec(ctx, t, l.env, "--config", cfg, "run", sc.task, "--approve-plan", "--detach"); code != 0 {
		t.Fatalf("run --detach: exit %d\n%s", code, stderr)
	}
	server := l.settings(t)
	if server.Settings["providers.openai.base_url"] != first.URL() {
		t.Fatalf("the server's settings %v, want the file's URL", server.Settings)
	}

	// A new URL, and an MCP server: both taken without a restart.
	writeConfig(second.URL(), fmt.Sprintf("\n[[mcp_servers]]\nname = \"docs\"\ncommand = %q\nargs = [%q]\ntools = [\"lookup\"]\n",
		mcptest.LookupServer(t), filepath.Join(t.TempDir(), "calls.log")))
	deadline := time.Now().Add(30 * time.Second)
	for s := l.settings(t).Settings; s["providers.openai.base_url"] != second.URL() || s["mcp_servers"] == ""; s = l.settings(t).Settings {
		if time.Now().After(deadline) {
			t.Fatalf("the server still runs with %v 30 s after the edit", l.settings(t).Settings)
		}
		time.Sleep(200 * time.Millisecond)
	}
	firstCalls := first.Calls()
	out := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := l.exec(ctx, t, l.env, "--config", cfg, "run", sc.task, "--out", out)
	if code != 0 || !strings.Contains(stdout, "succeeded") {
		t.Fatalf("run after the edit: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkFiles(t, sc, readDir(t, out, sc))
	if s := l.settings(t); s.PID != server.PID {
		t.Errorf("the server was restarted: pid %d, then %d", server.PID, s.PID)
	}
	if second.Calls() == 0 || first.Calls() != firstCalls {
		t.Errorf("model calls after the edit: %d to the new URL, %d more to the old; want all to the new", second.Calls(), first.Calls()-firstCalls)
	}
}
