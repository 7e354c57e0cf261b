package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// depsScript plays a model that plans one step and answers task with
// fix, whatever the attempt.
func depsScript(task, fix string) llmtest.Script {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		last := req.LastUser()
		if strings.Contains(last, planMarker) {
			return llmtest.Reply{Content: "1. Fix the code the tests check."}
		}
		for _, m := range req.Messages {
			if strings.Contains(m.Content, task) {
				return llmtest.Reply{Content: fix}
			}
		}
		return llmtest.Reply{Status: 400, Content: "not the task: " + clipText(last, 200)}
	}
}

// runInLocalMode runs task on the project dir in local mode (l's data
// dir and executable), and returns the succeeded task's status, whose
// human form must show a deps: line.
func runInLocalMode(t *testing.T, l *local, dir, lang, task string) workflows.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, errOut, code := l.exec(ctx, t, l.env, "run", "--dir", dir, "--lang", lang, "--max-iterations", "2", task)
	id := taskID(t, errOut)
	stOut, stErr, _ := l.exec(ctx, t, l.env, "status", id, "--json")
	var st workflows.Status
	if err := json.Unmarshal([]byte(stOut), &st); err != nil {
		t.Fatalf("status --json: %v\n%s\n%s", err, stOut, stErr)
	}
	if code != 0 || st.Phase != workflows.PhaseSucceeded {
		last := ""
		if st.LastTest != nil {
			last = st.LastTest.Output
		}
		t.Fatalf("run: exit %d, phase %s\n%s\n%s\nlast check:\n%s", code, st.Phase, out, errOut, last)
	}
	human, _, _ := l.exec(ctx, t, l.env, "status", id)
	if !strings.Contains(human, "deps:") {
		t.Errorf("status shows no deps: line:\n%s", human)
	}
	return st
}

// TestLocalWorkerInstallsDeps: the default local mode, with no
// sandbox.forwarder set, installs a Python project's requirements from a
// PEP 503 index the test serves, through the egress proxy and the
// autocoder executable itself as the sandbox's forwarder: built static
// (CGO_ENABLED=0) and dynamically linked (CGO_ENABLED=1), on both
// backends. The tests, which import the package, pass, and status shows
// the install and the host the proxy refused: an extra index on the
// loopback that no configuration names, which the requirements point pip
// to as well.
func TestLocalWorkerInstallsDeps(t *testing.T) {
	t.Parallel()
	const task = "Make greeting end with an exclamation mark"
	name, whl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
	fix := edit("greet.py", "    return greetlib.hello()", "    return greetlib.hello() + \"!\"")
	removeNewInstalls(t)
	for _, cgo := range []bool{false, true} {
		bin := testenv.BinaryCgo(t, cgo)
		for _, backend := range []string{"docker", "bwrap"} {
			t.Run(fmt.Sprintf("cgo=%v/%s", cgo, backend), func(t *testing.T) {
				index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
				other := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
				l := newLocalOf(t, bin, llmtest.New(t, depsScript(task, fix)), "AUTOCODER_SANDBOX="+backend,
					"AUTOCODER_REGISTRY_INDEXES=python="+index.URL(), "AUTOCODER_PRIVATE_REGISTRIES="+index.Host())
				dir := t.TempDir()
				writeProject(t, dir, map[string]string{
					"requirements.txt": "--extra-index-url " + other.URL() + "\ngreetlib==1.0\n",
					"greet.py":         "import greetlib\n\n\ndef greeting():\n    return greetlib.hello()\n",
					"test_greet.py":    "from greet import greeting\n\n\ndef test_greeting():\n    assert greeting() == 'hello from greetlib!'\n",
				})
				st := runInLocalMode(t, l, dir, "python", task)
				if st.LastTest == nil || !strings.Contains(st.LastTest.Deps, "installed in") {
					t.Errorf("the last check's deps: %+v", st.LastTest)
				}
				if n := index.Downloads(); n != 1 {
					t.Errorf("wheel downloads: %d, want 1", n)
				}
				if st.LastTest == nil || !strings.Contains(st.LastTest.Deps, "the egress proxy refused "+other.Host()) || other.Downloads() != 0 {
					t.Errorf("the host not on the list: %d downloads from it, deps note %+v", other.Downloads(), st.LastTest)
				}
				if got, _ := os.ReadFile(filepath.Join(dir, "greet.py")); !strings.Contains(string(got), `+ "!"`) {
					t.Errorf("greet.py after the task:\n%s", got)
				}
			})
		}
	}
}

// removeNewInstalls removes, at the test's end, the installs its local
// servers left in the worker's install cache (the servers run as this
// process's user, with its temporary directory).
func removeNewInstalls(t *testing.T) {
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("autocoder-deps-%d", os.Geteuid()))
	before := map[string]bool{}
	if ents, err := os.ReadDir(cache); err == nil {
		for _, e := range ents {
			before[e.Name()] = true
		}
	}
	t.Cleanup(func() {
		ents, _ := os.ReadDir(cache)
		for _, e := range ents {
			if !before[e.Name()] {
				if err := os.RemoveAll(filepath.Join(cache, e.Name())); err != nil {
					t.Logf("remove the install %s: %v", e.Name(), err)
				}
			}
		}
	})
}
