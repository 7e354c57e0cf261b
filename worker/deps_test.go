package worker

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// pyIndex is a PEP 503 simple index of wheels the test builds, served on
// the loopback; it counts the wheels it hands out.
type pyIndex struct {
	srv       *httptest.Server
	wheels    map[string][]byte // file name → wheel
	downloads atomic.Int32
}

func newPyIndex(t *testing.T, wheels map[string][]byte) *pyIndex {
	ix := &pyIndex{wheels: wheels}
	ix.srv = httptest.NewServer(http.HandlerFunc(ix.serve))
	t.Cleanup(ix.srv.Close)
	return ix
}

func (ix *pyIndex) url() string { return ix.srv.URL + "/simple/" }

func (ix *pyIndex) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/simple/":
		w.Header().Set("Content-Type", "text/html")
		for name := range ix.wheels {
			project := strings.SplitN(name, "-", 2)[0]
			fmt.Fprintf(w, "<a href=\"/simple/%s/\">%s</a>\n", project, project)
		}
	case strings.HasPrefix(p, "/simple/"):
		project := strings.Trim(strings.TrimPrefix(p, "/simple/"), "/")
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!DOCTYPE html><html><body>\n")
		for name, data := range ix.wheels {
			if strings.SplitN(name, "-", 2)[0] == project {
				sum := sha256.Sum256(data)
				fmt.Fprintf(w, "<a href=\"/files/%s#sha256=%s\">%s</a>\n", name, hex.EncodeToString(sum[:]), name)
			}
		}
		fmt.Fprint(w, "</body></html>\n")
	case strings.HasPrefix(p, "/files/"):
		data, ok := ix.wheels[strings.TrimPrefix(p, "/files/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		ix.downloads.Add(1)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(data)
	default:
		http.NotFound(w, r)
	}
}

// pureWheel builds a pure-Python wheel of one module: name/__init__.py
// with src, its METADATA, WHEEL and RECORD.
func pureWheel(t *testing.T, name, version, src string) (string, []byte) {
	t.Helper()
	info := name + "-" + version + ".dist-info/"
	files := [][2]string{
		{name + "/__init__.py", src},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: autocoder-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f[1]))
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString(info + "RECORD,,\n")
	w, err := zw.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return name + "-" + version + "-py3-none-any.whl", buf.Bytes()
}

var (
	forwarderOnce sync.Once
	forwarderPath string
	forwarderErr  error
)

// testForwarder builds the egress forwarder, static, once per test
// binary, in a directory every sandbox user can read.
func testForwarder(t *testing.T) string {
	t.Helper()
	forwarderOnce.Do(func() {
		dir, err := os.MkdirTemp("", "autocoder-forward-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			forwarderErr = err
			return
		}
		path := filepath.Join(dir, "egress-forward")
		cmd := exec.Command("go", "build", "-trimpath", "-o", path, "../sandbox/cmd/egress-forward")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			forwarderErr = fmt.Errorf("build the forwarder: %w: %s", err, out)
			return
		}
		forwarderPath = path
	})
	if forwarderErr != nil {
		t.Fatal(forwarderErr)
	}
	return forwarderPath
}

// depsEnv is the activities with the real bwrap sandbox, the worker's
// egress proxy with index as a private registry and python's index, and
// a deps cache of the test's.
type depsEnv struct {
	acts *activities.Activities
	tenv *testsuite.TestActivityEnvironment
}

func newDepsEnv(t *testing.T, index *pyIndex) *depsEnv {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	sb, err := sandbox.New(ctx, sandbox.Config{Backend: "bwrap", PoolSize: -1, Forwarder: testForwarder(t),
		Profiles: sandbox.ProfilesOf(languages.All())})
	if err != nil {
		testenv.RequireService(t, "the bwrap sandbox", err)
	}
	t.Cleanup(func() { sb.Close() })
	u, _ := url.Parse(index.url())
	eg, err := StartEgress(egress.Config{Registries: []string{u.Host}}, "127.0.0.1:0")
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
		DepsIndexes: map[string]string{"python": index.url()}}
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
	name, whl := pureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
	index := newPyIndex(t, map[string][]byte{name: whl})
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
`, index.url()),
	}
	s := e.check(t, project)
	if !s.Passed {
		t.Fatalf("first check failed (stage %s): %s", s.Stage, s.Output)
	}
	if n := index.downloads.Load(); n != 1 {
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
	if n := index.downloads.Load(); n != 1 {
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
