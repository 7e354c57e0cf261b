package activities

import (
	"context"
	"errors"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// sandboxOf returns a runner of the named backend, shared by the tests.
func sandboxOf(t testing.TB, backend string) sandbox.Runner {
	t.Helper()
	sb, err := sandbox.New(context.Background(), sandbox.Config{Backend: backend, PoolSize: -1, Profiles: sandbox.ProfilesOf(languages.All())})
	if err != nil {
		testenv.RequireService(t, backend+" sandbox", err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// callTurn appends the model's turn holding calls and returns the
// transcript's length after it.
func callTurn(t *testing.T, e *env, id string, calls ...llm.ToolCall) int {
	t.Helper()
	n := start(t, e, id)
	return run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: id, Position: n,
		Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: calls}}})
}

func filesOf(t *testing.T, e *env, id string) map[string]string {
	t.Helper()
	files, err := e.acts.Store.GetSnapshot(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range files {
		m[f.Path] = string(f.Data)
	}
	return m
}

// A run call on each backend: the files it creates, changes and deletes
// become the next snapshot, tool caches and binaries stay out, and the
// model reads the exit code, both streams and what changed.
func TestSandboxCallRunKeepsChangedFiles(t *testing.T) {
	const script = `printf 'x = 2\n' > app.py; mkdir -p out && echo hi > out/new.txt; rm old.txt
mkdir -p __pycache__ && echo c > __pycache__/app.pyc; printf 'a\000b' > blob.bin
echo done; echo warning >&2; exit 3`
	for _, be := range []string{"bwrap", "docker"} {
		t.Run(be, func(t *testing.T) {
			e := newEnvAt(t, "")
			e.acts.Sandbox = sandboxOf(t, be)
			snap := e.snapshot(t, map[string]string{"app.py": "x = 1\n", "old.txt": "bye\n", "same.txt": "same\n"})
			n := callTurn(t, e, "tr", llm.ToolCall{ID: "c1", Name: "run", Arguments: `{"command":` + quote(script) + `}`})
			out := run[SandboxCallOutput](t, e, e.acts.SandboxCall, SandboxCallInput{Transcript: "tr", Position: n, CallID: "c1", Snapshot: snap, Language: "python"})
			if out.ExitCode != 3 || out.Length != n+1 || out.Snapshot == snap || !slices.Equal(out.Changed, []string{"app.py", "old.txt", "out/new.txt"}) {
				t.Fatalf("output = %+v", out)
			}
			if got := filesOf(t, e, out.Snapshot); len(got) != 3 || got["app.py"] != "x = 2\n" || got["out/new.txt"] != "hi\n" || got["same.txt"] != "same\n" {
				t.Fatalf("new snapshot = %q", got)
			}
			if _, ok := e.acts.snapshots.get(out.Snapshot); !ok {
				t.Error("the new snapshot is not in the cache the next call reads")
			}
			msgs := e.messages(t, "tr")
			res := msgs[n].Result
			if len(msgs) != n+1 || res == nil || res.CallID != "c1" || res.Name != "run" || res.IsError {
				t.Fatalf("appended %+v", msgs[n:])
			}
			for _, want := range []string{"exit code: 3\n", "stdout:\ndone\n", "stderr:\nwarning\n",
				"files changed: app.py, old.txt (deleted), out/new.txt (new)\n", "not kept (tool caches and binary files): __pycache__/app.pyc, blob.bin"} {
				if !strings.Contains(res.Content, want) {
					t.Errorf("result lacks %q:\n%s", want, res.Content)
				}
			}
			if out.Headline != "exit 3, 3 files changed" {
				t.Errorf("headline %q", out.Headline)
			}
		})
	}
}

// quote is a JSON string.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// Output past the cap reaches the model as its head and tail; a run that
// leaves too much in the workdir, or times out, keeps nothing.
func TestSandboxCallCapsOutputAndRefusesTooMuch(t *testing.T) {
	e := newEnvAt(t, "")
	e.acts.Sandbox = sandboxOf(t, "bwrap")
	snap := e.snapshot(t, map[string]string{"a.txt": "a\n"})
	n := callTurn(t, e, "tr",
		llm.ToolCall{ID: "flood", Name: "run", Arguments: `{"command":"i=0; while [ $i -lt 5000 ]; do echo line$i; i=$((i+1)); done"}`},
		llm.ToolCall{ID: "big", Name: "run", Arguments: `{"command":"head -c 2000000 /dev/zero | tr '\\0' a > big.txt; rm a.txt"}`},
		llm.ToolCall{ID: "slow", Name: "run", Arguments: `{"command":"rm a.txt; sleep 30","timeout_seconds":1}`})
	in := SandboxCallInput{Transcript: "tr", Position: n, CallID: "flood", Snapshot: snap, Language: "python", OutputBytes: 2000}
	out := run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
	text := e.messages(t, "tr")[n].Result.Content
	if len(text) > 2200 || !strings.Contains(text, "line0\n") || !strings.Contains(text, "line4999\n") || !strings.Contains(text, "bytes elided") || out.Snapshot != snap {
		t.Fatalf("capped output (%d bytes):\n%s", len(text), text)
	}
	for _, c := range []struct{ id, want string }{
		{"big", "more than the limit"},
		{"slow", "timed out: killed after 1s"},
	} {
		in.Position, in.CallID = in.Position+1, c.id
		out := run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
		text := e.messages(t, "tr")[in.Position].Result.Content
		if out.Snapshot != snap || out.Changed != nil || !strings.Contains(text, c.want) || !strings.Contains(text, "files not kept") {
			t.Errorf("%s: %+v\n%s", c.id, out, text)
		}
	}
}

// A run killed for its memory is told as such on each backend, with the
// limit, as a timeout is told with its time, and keeps no file.
func TestSandboxCallReportsMemoryLimit(t *testing.T) {
	for _, be := range []string{"bwrap", "docker"} {
		t.Run(be, func(t *testing.T) {
			e := newEnvAt(t, "")
			e.acts.Sandbox = sandboxOf(t, be)
			e.acts.Limits = sandbox.DefaultLimits()
			e.acts.Limits.MemoryBytes = 256 << 20
			snap := e.snapshot(t, map[string]string{"a.txt": "a\n"})
			n := callTurn(t, e, "tr", llm.ToolCall{ID: "hog", Name: "run",
				Arguments: `{"command":"rm a.txt; python3 -c \"x = bytearray(b'x') * (1 << 30)\""}`})
			out := run[SandboxCallOutput](t, e, e.acts.SandboxCall, SandboxCallInput{Transcript: "tr", Position: n, CallID: "hog", Snapshot: snap, Language: "python"})
			text := e.messages(t, "tr")[n].Result.Content
			if out.Snapshot != snap || out.Headline != "out of memory" || !strings.Contains(text, "out of memory: killed: memory limit 256 MiB\n") || !strings.Contains(text, "files not kept: the command was killed") {
				t.Fatalf("%+v\n%s", out, text)
			}
		})
	}
}

// A retry never runs the call again: not after the append (the transcript
// holds the result), nor after a failed append (the memo holds it). The
// command writes a random value, so a second run would make another
// snapshot.
func TestSandboxCallRetryDoesNotRunAgain(t *testing.T) {
	e := newEnvAt(t, "")
	e.acts.Sandbox = sandboxOf(t, "bwrap")
	snap := e.snapshot(t, map[string]string{"a.txt": "a\n"})
	const random = `{"command":"od -An -tx1 -N16 /dev/urandom | tee rand.txt"}`
	n := callTurn(t, e, "tr", llm.ToolCall{ID: "c1", Name: "run", Arguments: random}, llm.ToolCall{ID: "c2", Name: "run", Arguments: random})
	in := SandboxCallInput{Transcript: "tr", Position: n, CallID: "c1", Snapshot: snap, Language: "python"}
	first := run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
	again := run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
	if first.Snapshot == snap || again.Snapshot != first.Snapshot || len(e.messages(t, "tr")) != n+1 {
		t.Fatalf("first %+v, retry %+v, %d messages", first, again, len(e.messages(t, "tr")))
	}

	real := e.acts.Store
	e.acts.Store = &faultyStore{Store: real, failAppends: 1}
	in.Position, in.CallID, in.Snapshot = n+1, "c2", first.Snapshot
	if _, err := e.tenv.ExecuteActivity(e.acts.SandboxCall, in); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("first try: %v", err)
	}
	kept, _, err := readMemo[sandboxCallMemo](context.Background(), e.acts.Store, memoKey("sandbox-call", in.Transcript, strconv.Itoa(in.Position), in.CallID))
	if err != nil {
		t.Fatal(err)
	}
	retry := run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
	msgs := e.messages(t, "tr")
	if retry.Snapshot != kept.Output.Snapshot || len(msgs) != n+2 || msgs[n+1].Result.Content != kept.Text {
		t.Fatalf("retry %+v after a failed append; kept %+v", retry, kept.Output)
	}

	// A position another message holds, with no outcome kept, is refused.
	e.acts.Store = real
	_, err = e.tenv.ExecuteActivity(e.acts.SandboxCall, SandboxCallInput{Transcript: "tr", Position: n - 1, CallID: "c1", Snapshot: snap, Language: "python"})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || !appErr.NonRetryable() {
		t.Fatalf("occupied position: %v", err)
	}
}

// run_tests runs the user's tests as they were at the start, whatever the
// attempt did to them, and keeps no file the run changes; named tests run
// alone; bad arguments come back as an error the model can fix.
func TestSandboxCallRunTestsJudgedWithOriginals(t *testing.T) {
	e := newEnvAt(t, "")
	e.acts.Sandbox = sandboxOf(t, "bwrap")
	const userTest = "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
	input := e.snapshot(t, map[string]string{"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": userTest})
	// The attempt weakened the user's test instead of fixing add.
	attempt := e.snapshot(t, map[string]string{"calc.py": "def add(a, b):\n    return a - b\n", "test_calc.py": "def test_add():\n    pass\n"})
	n := callTurn(t, e, "tr",
		llm.ToolCall{ID: "all", Name: "run_tests", Arguments: `{}`},
		llm.ToolCall{ID: "one", Name: "run_tests", Arguments: `{"tests":["test_calc.py::test_zero"]}`},
		llm.ToolCall{ID: "bad", Name: "run_tests", Arguments: `{"tests":["--deselect=test_calc.py"]}`})
	in := SandboxCallInput{Transcript: "tr", Position: n, CallID: "all", Snapshot: attempt, Language: "python", InputSnapshot: input}
	out := run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
	text := e.messages(t, "tr")[n].Result.Content
	if out.ExitCode == 0 || out.Snapshot != attempt || !strings.Contains(text, "test_calc.py::test_add") || !strings.Contains(text, "the user's test file test_calc.py") {
		t.Fatalf("whole run %+v:\n%s", out, text)
	}
	in.Position, in.CallID = n+1, "one"
	out = run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
	text = e.messages(t, "tr")[n+1].Result.Content
	if !strings.Contains(text, "1 passed") || strings.Contains(text, "test_add") {
		t.Fatalf("named test %+v:\n%s", out, text)
	}
	in.Position, in.CallID = n+2, "bad"
	out = run[SandboxCallOutput](t, e, e.acts.SandboxCall, in)
	res := e.messages(t, "tr")[n+2].Result
	if !res.IsError || !strings.Contains(res.Content, "not a test name") || out.Snapshot != attempt {
		t.Fatalf("bad arguments %+v: %+v", out, res)
	}
}

// The agent set offers every tool, install only with a way to add
// packages, whose example its description names.
func TestAgentToolSetOffersEveryTool(t *testing.T) {
	names := func(set string, add lang.Add) ([]string, string) {
		ts, err := toolSet(set, add)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		desc := ""
		for _, tl := range ts {
			out = append(out, tl.Name)
			if tl.Name == "install" {
				desc = tl.Description
			}
		}
		return out, desc
	}
	if got, _ := names(ToolSetAgent, lang.Add{}); !slices.Equal(got, []string{"list", "read", "search", "write", "edit", "delete", "run", "run_tests", "finish"}) {
		t.Errorf("agent set %q", got)
	}
	add := lang.Add{Command: func([]string, bool) ([]string, error) { return nil, nil }, Example: "requests==2.32.3"}
	got, desc := names(ToolSetAgent, add)
	if !slices.Equal(got, []string{"list", "read", "search", "write", "edit", "delete", "run", "run_tests", "install", "finish"}) || !strings.Contains(desc, `e.g. "requests==2.32.3"`) {
		t.Errorf("agent set with an add: %q, install described as %q", got, desc)
	}
	if got, _ := names(ToolSetWorkspace, add); slices.Contains(got, "run") || slices.Contains(got, "install") || slices.Contains(got, "finish") || len(got) != 6 {
		t.Errorf("workspace set %q", got)
	}
}

// applyRun keeps a workspace the limits allow.
func TestApplyRunRefusesABareRepository(t *testing.T) {
	after := []workspace.File{{Path: "x/HEAD", Data: []byte("ref: refs/heads/main\n")}, {Path: "x/objects/a", Data: []byte("o")}, {Path: "x/refs/heads/m", Data: []byte("r")}}
	if _, d := applyRun(nil, after, nil); !strings.Contains(d.refused, "repository") {
		t.Fatalf("refused %q", d.refused)
	}
}

// applyRun with keep takes the changes of the paths it allows alone: the
// rest of what the run created, changed or deleted stays as it was, and
// the model is told it was not kept.
func TestApplyRunKeepsOnlyAllowedPaths(t *testing.T) {
	f := func(p, d string) workspace.File { return workspace.File{Path: p, Data: []byte(d)} }
	before := []workspace.File{f("app.py", "x = 1\n"), f("old.py", "y = 1\n"), f("requirements.txt", "a==1\n")}
	after := []workspace.File{f("app.py", "x = 2\n"), f("new.py", "z = 1\n"), f("requirements.txt", "a==1\nb==2\n")}
	next, d := applyRun(before, after, func(p string) bool { return p == "requirements.txt" || p == "package.json" })
	got := map[string]string{}
	for _, f := range next {
		got[f.Path] = string(f.Data)
	}
	if len(got) != 3 || got["app.py"] != "x = 1\n" || got["old.py"] != "y = 1\n" || got["requirements.txt"] != "a==1\nb==2\n" {
		t.Errorf("workspace after the run: %q", got)
	}
	if !slices.Equal(d.changed, []string{"requirements.txt"}) || !slices.Equal(d.others, []string{"app.py", "new.py", "old.py"}) {
		t.Errorf("changed %q, others %q", d.changed, d.others)
	}
	if text := d.describe(); !strings.Contains(text, "files changed: requirements.txt\n") || !strings.Contains(text, "not kept (only manifests and lock files are): app.py, new.py, old.py") {
		t.Errorf("described as:\n%s", text)
	}
}
