package worker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// depsEnv is the activities with the real bwrap sandbox, the worker's
// egress proxy with index as a private registry and python's index, and
// a deps cache of the test's.
type depsEnv struct {
	acts *activities.Activities
	tenv *testsuite.TestActivityEnvironment
}

func newDepsEnv(t *testing.T, index *registrytest.PyIndex) *depsEnv {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sb, err := sandbox.New(ctx, sandbox.Config{Backend: "bwrap", PoolSize: -1, Forwarder: testenv.Forwarder(t, false),
		Profiles: sandbox.ProfilesOf(languages.All())})
	if err != nil {
		testenv.RequireService(t, "the bwrap sandbox", err)
	}
	t.Cleanup(func() { sb.Close() })
	eg, err := StartEgress(egress.Config{Registries: []string{index.Host()}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eg.Close() })
	// Not under t.TempDir(), whose parent the sandbox's user cannot enter.
	deps, err := os.MkdirTemp("", "autocoder-deps-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(deps) })
	acts := &activities.Activities{Store: st, Sandbox: sb, Egress: eg.Routes(), DepsDir: deps,
		DepsIndexes: map[string]string{"python": index.URL()}}
	var s testsuite.WorkflowTestSuite
	tenv := s.NewTestActivityEnvironment()
	tenv.RegisterActivity(acts)
	return &depsEnv{acts: acts, tenv: tenv}
}

func (e *depsEnv) check(t *testing.T, files map[string]string) activities.TestSummary {
	t.Helper()
	var fs []workspace.File
	for p, d := range files {
		fs = append(fs, workspace.File{Path: p, Data: []byte(d)})
	}
	id, err := e.acts.Store.PutSnapshot(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	// The tests try the network themselves: the policy would stop them.
	v, err := e.tenv.ExecuteActivity(e.acts.Check, activities.CheckInput{SnapshotID: id, Language: "python", IgnorePolicy: true})
	if err != nil {
		t.Fatal(err)
	}
	var s activities.TestSummary
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCheckInstallsPythonDeps: a project whose requirements.txt names a
// package of a PEP 503 index the test serves (a private registry, and
// pip's index) has it installed through the egress proxy before its
// tests, which import it; a second check with the same requirements
// reuses the install without a download; the tests themselves cannot
// reach the index. A requirement the index lacks is a failed check whose
// output is pip's, not an error.
func TestCheckInstallsPythonDeps(t *testing.T) {
	name, whl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
	index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
	e := newDepsEnv(t, index)
	project := map[string]string{
		"requirements.txt": "# what the code needs\ngreetlib==1.0\n",
		"test_greet.py": fmt.Sprintf(`import urllib.request

import greetlib


def test_hello():
    assert greetlib.hello() == "hello from greetlib"


def test_no_network():
    try:
        urllib.request.urlopen(%q, timeout=3)
    except OSError:
        return
    raise AssertionError("the test run reached the index")
`, index.URL()),
	}
	s := e.check(t, project)
	if !s.Passed {
		t.Fatalf("first check failed (stage %s): %s", s.Stage, s.Output)
	}
	if n := index.Downloads(); n != 1 {
		t.Errorf("wheel downloads after the first check: %d, want 1", n)
	}
	t.Logf("first check: %s; %s", s.Deps, s.Output)
	if !strings.Contains(s.Deps, "installed in") {
		t.Errorf("the first check's deps note: %q", s.Deps)
	}

	s = e.check(t, project)
	if !s.Passed {
		t.Fatalf("second check failed (stage %s): %s", s.Stage, s.Output)
	}
	if n := index.Downloads(); n != 1 {
		t.Errorf("wheel downloads after the second check: %d, want 1 (the install is cached)", n)
	}
	if !strings.Contains(s.Deps, "cached") {
		t.Errorf("the second check's deps note: %q", s.Deps)
	}

	project["requirements.txt"] = "greetlib==1.0\nno-such-package==2.0\n"
	s = e.check(t, project)
	t.Logf("missing package: %s\n%s", s.Deps, s.Output)
	if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "no-such-package") {
		t.Errorf("a missing package: passed=%v stage=%q output:\n%s", s.Passed, s.Stage, s.Output)
	}
}
