package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// runWithSetup runs task with --setup setup on a copy of files in local
// mode, and returns the task's status, its human form, what run printed
// on stderr, its exit code and the project's directory.
func runWithSetup(t *testing.T, l *local, files map[string]string, setup, task string) (workflows.Status, string, string, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	writeProject(t, dir, files)
	_, errOut, code := l.exec(ctx, t, l.env, "run", "--dir", dir, "--lang", "python", "--max-iterations", "2", "--setup", setup, task)
	id := taskID(t, errOut)
	stOut, stErr, _ := l.exec(ctx, t, l.env, "status", id, "--json")
	var st workflows.Status
	if err := json.Unmarshal([]byte(stOut), &st); err != nil {
		t.Fatalf("status --json: %v\n%s\n%s", err, stOut, stErr)
	}
	human, _, _ := l.exec(ctx, t, l.env, "status", id)
	return st, human, errOut, code, dir
}

// TestLocalSetup: in local mode on the bubblewrap backend, `run --setup`
// generates a module the project imports from a file it fetches through
// the egress proxy (a server on the loopback, named as a private
// registry) before the model starts: the first attempt's tests pass with
// the model's one edit, which they could not without the module; the
// module is not written back to the project, whose own file the model
// changed is. A second task on the same project applies the kept changes
// without running the setup (the file is fetched once), and status says
// so. A setup that fails ends the task with its exit status and output,
// and no model is called.
func TestLocalSetup(t *testing.T) {
	t.Parallel()
	const task = "Make greeting end with an exclamation mark"
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		fmt.Fprint(w, "HELLO = 'hello'\n")
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	model := llmtest.New(t, depsScript(task, edit("greet.py", "    return HELLO", "    return HELLO + \"!\"")))
	l := newLocal(t, model, "AUTOCODER_SANDBOX=bwrap", "AUTOCODER_PRIVATE_REGISTRIES="+u.Host)
	project := map[string]string{
		"greet.py":      "from gen.words import HELLO\n\n\ndef greeting():\n    return HELLO\n",
		"test_greet.py": "from greet import greeting\n\n\ndef test_greeting():\n    assert greeting() == 'hello!'\n",
	}
	setup := "mkdir -p gen && python3 -c \"import urllib.request; " +
		"open('gen/words.py', 'w').write(urllib.request.urlopen('" + srv.URL + "/words').read().decode())\""

	st, human, errOut, code, dir := runWithSetup(t, l, project, setup, task)
	t.Logf("first task:\n%s", human)
	if code != 0 || st.Phase != workflows.PhaseSucceeded {
		t.Fatalf("first task: exit %d, phase %s, error %q\n%s", code, st.Phase, st.Error, errOut)
	}
	if st.Setup == nil || !strings.HasPrefix(st.Setup.Note, "ran in ") || st.Setup.Changed != 1 || served.Load() != 1 {
		t.Errorf("first task's setup: %+v, file served %d times", st.Setup, served.Load())
	}
	if !strings.Contains(human, "setup:     ran in ") {
		t.Errorf("status shows no setup line")
	}
	if len(st.Checkpoints) == 0 || !st.Checkpoints[0].Passed {
		t.Errorf("the first attempt did not pass: %+v", st.Checkpoints)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "greet.py")); !strings.Contains(string(got), `HELLO + "!"`) {
		t.Errorf("greet.py after the task:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "gen", "words.py")); err == nil {
		t.Errorf("the setup's module was written back to the project")
	}

	st, human, errOut, code, _ = runWithSetup(t, l, project, setup, task)
	if code != 0 || st.Phase != workflows.PhaseSucceeded {
		t.Fatalf("second task: exit %d, phase %s, error %q\n%s", code, st.Phase, st.Error, errOut)
	}
	if st.Setup == nil || !st.Setup.Cached || served.Load() != 1 || !strings.Contains(human, "setup:     cached, 1 file changed") {
		t.Errorf("second task's setup: %+v, file served %d times; status:\n%s", st.Setup, served.Load(), human)
	}

	calls := model.Calls()
	st, human, errOut, code, _ = runWithSetup(t, l, project, "echo 'codegen: no schema found' >&2; exit 3", task)
	t.Logf("failing setup:\n%s\n%s", errOut, human)
	if code == 0 || st.Phase != workflows.PhaseFailed {
		t.Fatalf("a failing setup: exit %d, phase %s", code, st.Phase)
	}
	for _, want := range []string{"setup failed", "exited with status 3", "codegen: no schema found", "without the setup"} {
		if !strings.Contains(st.Error, want) || !strings.Contains(errOut, want) {
			t.Errorf("the task's error or run's output says no %q:\n%s\n%s", want, st.Error, errOut)
		}
	}
	if n := model.Calls() - calls; n != 0 {
		t.Errorf("the model was called %d times after a failed setup", n)
	}
}
