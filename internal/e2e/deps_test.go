package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// installsMu lets one test at a time install into the worker's install
// cache, so that removeNewInstalls removes that test's installs alone.
var installsMu sync.Mutex

// removeNewInstalls removes, at the test's end, the installs its local
// servers left in the worker's install cache (the servers run as this
// process's user, with its temporary directory). Until then, other tests
// that call it wait.
func removeNewInstalls(t *testing.T) {
	installsMu.Lock()
	cache := filepath.Join(os.TempDir(), fmt.Sprintf("autocoder-deps-%d", os.Geteuid()))
	before := map[string]bool{}
	if ents, err := os.ReadDir(cache); err == nil {
		for _, e := range ents {
			before[e.Name()] = true
		}
	}
	t.Cleanup(func() {
		defer installsMu.Unlock()
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

// goModuleAgent writes a Go module that requires golang.org/x/text,
// completes its go.sum with go mod tidy through the run tool, runs a
// command that imports a module go.mod does not require, then the tests,
// and finishes. seen gets the results each turn is sent of the last.
func goModuleAgent(seen func(turn int, results string)) agent {
	return func(v turnView) llmtest.Reply {
		seen(v.turn(), strings.Join(v.lastResults(), "\n"))
		switch v.turn() {
		case 0:
			return calls(v, "",
				call("write", map[string]any{"path": "go.mod", "content": "module example.com/narrow\n\ngo 1.21\n\nrequire golang.org/x/text v0.21.0\n"}),
				call("write", map[string]any{"path": "narrow.go", "content": "package narrow\n\nimport \"golang.org/x/text/width\"\n\n" +
					"// Narrow folds full-width letters to their usual width.\nfunc Narrow(s string) string { return width.Fold.String(s) }\n"}),
				call("write", map[string]any{"path": "narrow_test.go", "content": "package narrow\n\nimport \"testing\"\n\n" +
					"func TestNarrow(t *testing.T) {\n\tif got := Narrow(\"ｈｅｌｌｏ\"); got != \"hello\" {\n\t\tt.Fatalf(\"Narrow: %q\", got)\n\t}\n}\n"}))
		case 1:
			return calls(v, "", call("run", map[string]any{"command": "go mod tidy"}))
		case 2:
			return calls(v, "", call("run", map[string]any{"command": undeclaredModule}))
		case 3:
			return calls(v, "", call("run_tests", map[string]any{}))
		case 4:
			return calls(v, "", call("finish", map[string]any{"summary": "Narrow folds full-width letters with golang.org/x/text."}))
		}
		return llmtest.Fail("unexpected turn %d; the last user message:\n%s", v.turn(), clipText(v.last, 2000))
	}
}

// undeclaredModule builds, for a moment, a package that imports a module
// go.mod does not require.
const undeclaredModule = `mkdir -p extra && printf 'package extra\n\nimport _ "github.com/google/uuid"\n' > extra/extra.go && go build ./extra; s=$?; rm -rf extra; exit $s`

// TestLocalWorkerInstallsGoModules: in the default local mode, on both
// backends, a scripted model writes a Go module whose go.mod requires
// golang.org/x/text; before its commands run, the worker downloads the
// module through the egress proxy from the Go module proxy this machine's
// go command is configured with; the model's go mod tidy completes go.sum
// offline and the workspace keeps it; a command importing a module that
// go.mod does not require fails at once with Go's own message; the task
// succeeds, and the delivered go.mod and go.sum are what a plain go build
// of the user's needs. status shows the install.
func TestLocalWorkerInstallsGoModules(t *testing.T) {
	t.Parallel()
	const task = "Write Narrow, which folds full-width letters, with golang.org/x/text"
	removeNewInstalls(t)
	bin := testenv.BinaryCgo(t, false)
	for _, backend := range []string{"docker", "bwrap"} {
		t.Run(backend, func(t *testing.T) {
			var mu sync.Mutex
			results := map[int]string{}
			model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply {
				return goModuleAgent(func(turn int, r string) {
					mu.Lock()
					defer mu.Unlock()
					results[turn] = r
				}).answer("1. Write Narrow with its test.", chatView(req))
			})
			l := newLocalOf(t, bin, model, "AUTOCODER_SANDBOX="+backend)
			dir := t.TempDir()
			st := runInLocalMode(t, l, dir, "go", task)
			if st.LastTest == nil || !strings.Contains(st.LastTest.Deps, "Go dependencies") {
				t.Errorf("the last check's deps: %+v", st.LastTest)
			}
			mu.Lock()
			defer mu.Unlock()
			tidy, undeclared := results[2], results[3]
			t.Logf("deps: %s\ngo mod tidy:\n%s\nundeclared module:\n%s", st.LastTest.Deps, tidy, undeclared)
			if !strings.Contains(tidy, "exit code: 0") || !strings.Contains(tidy, "go.sum (new)") {
				t.Errorf("go mod tidy:\n%s", tidy)
			}
			if !strings.Contains(undeclared, "no required module provides package github.com/google/uuid") || strings.Contains(undeclared, "exit code: 0") {
				t.Errorf("a module go.mod does not require:\n%s", undeclared)
			}
			sum, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
			for _, line := range []string{"golang.org/x/text v0.21.0 h1:", "golang.org/x/text v0.21.0/go.mod h1:"} {
				if !strings.Contains(string(sum), line) {
					t.Errorf("the delivered go.sum has no %q line:\n%s", line, sum)
				}
			}
		})
	}
}
