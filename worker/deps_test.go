package worker

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/versions"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// depsEnv is the activities with the real bwrap sandbox, the worker's
// egress proxy with the private registries, the languages' indexes, and
// a deps cache of the test's.
type depsEnv struct {
	acts *activities.Activities
	tenv *testsuite.TestActivityEnvironment
}

func newDepsEnv(t *testing.T, private []string, indexes map[string]string) *depsEnv {
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
	eg, err := StartEgress(egress.Config{Registries: private}, "127.0.0.1:0")
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
	acts := &activities.Activities{Store: st, Sandbox: sb, Egress: eg.Routes(), DepsDir: deps, DepsIndexes: indexes}
	var s testsuite.WorkflowTestSuite
	tenv := s.NewTestActivityEnvironment()
	tenv.RegisterActivity(acts)
	return &depsEnv{acts: acts, tenv: tenv}
}

func (e *depsEnv) check(t *testing.T, lang string, files map[string]string) activities.TestSummary {
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
	v, err := e.tenv.ExecuteActivity(e.acts.Check, activities.CheckInput{SnapshotID: id, Language: lang, IgnorePolicy: true})
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
	e := newDepsEnv(t, []string{index.Host()}, map[string]string{"python": index.URL()})
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
	s := e.check(t, "python", project)
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

	s = e.check(t, "python", project)
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
	s = e.check(t, "python", project)
	t.Logf("missing package: %s\n%s", s.Deps, s.Output)
	if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "no-such-package") {
		t.Errorf("a missing package: passed=%v stage=%q output:\n%s", s.Passed, s.Stage, s.Output)
	}
}

// textModule is golang.org/x/text, a module of the Go team, at a version
// the Go module proxy serves, and its go.sum lines as go mod tidy writes
// them.
const (
	textModule = "golang.org/x/text v0.21.0"
	textSum    = "golang.org/x/text v0.21.0 h1:zyQAAkrwaneQ066sspRyJaG9VNi/YJ1NfzcGB3hZ/qo=\n" +
		"golang.org/x/text v0.21.0/go.mod h1:4IBbMaMmOPCJ8SecivzSH54+73PCFmPWxNTLm+vZkEQ=\n"
)

// TestCheckInstallsGoModules: a Go project whose go.mod requires
// golang.org/x/text has it downloaded, through the egress proxy, from the
// Go module proxy this machine's go command is configured with (go env
// GOPROXY, as the worker reads it) before its tests, which import it and
// pass over the read-only module cache with the go.sum go mod tidy
// writes; a second check reuses the install; the tests themselves cannot
// reach the module proxy. Without go.sum the tests fail with Go's own
// message, as the user's go test would. A worker whose installs are off
// fails the check and says what to do.
func TestCheckInstallsGoModules(t *testing.T) {
	goproxy := versions.Configured(context.Background(), golang.Language().Deps.Versions.Configured)
	e := newDepsEnv(t, nil, map[string]string{"go": goproxy})
	first, _, _ := strings.Cut(goproxy, ",")
	proxyAddr := "localhost:443"
	if u, err := url.Parse(first); err == nil && u.Host != "" {
		proxyAddr = net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), "443"))
	}
	project := map[string]string{
		"go.mod": "module example.com/narrow\n\ngo 1.21\n\nrequire " + textModule + "\n",
		"go.sum": textSum,
		"narrow.go": `package narrow

import "golang.org/x/text/width"

// Narrow folds full-width letters to their usual width.
func Narrow(s string) string { return width.Fold.String(s) }
`,
		"narrow_test.go": fmt.Sprintf(`package narrow

import (
	"net"
	"testing"
	"time"
)

func TestNarrow(t *testing.T) {
	if got := Narrow("ｈｅｌｌｏ"); got != "hello" {
		t.Fatalf("Narrow: %%q", got)
	}
}

func TestNoNetwork(t *testing.T) {
	if c, err := net.DialTimeout("tcp", %q, 3*time.Second); err == nil {
		c.Close()
		t.Fatal("the test run reached the module proxy")
	}
}
`, proxyAddr),
	}
	s := e.check(t, "go", project)
	t.Logf("first check: %s\n%s", s.Deps, s.Output)
	if !s.Passed || !strings.Contains(s.Deps, "installed in") {
		t.Fatalf("first check: passed=%v stage %s, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}
	s = e.check(t, "go", project)
	if !s.Passed || !strings.Contains(s.Deps, "cached") {
		t.Errorf("second check: passed=%v, deps %q:\n%s", s.Passed, s.Deps, s.Output)
	}

	delete(project, "go.sum")
	s = e.check(t, "go", project)
	if s.Passed || s.Stage != "test" || !strings.Contains(s.Output, "missing go.sum entry") || !strings.Contains(s.Deps, "cached") {
		t.Errorf("without go.sum: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}

	project["go.sum"] = textSum
	e.acts.Egress = nil
	s = e.check(t, "go", project)
	t.Logf("installs off: %s\n%s", s.Deps, s.Output)
	if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "turn installs on") || !strings.Contains(s.Deps, "installs are off") {
		t.Errorf("installs off: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}
}
