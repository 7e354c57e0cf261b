package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/workspace"
)

// servedFile serves body at every path on the loopback and counts the
// requests; its host:port is what a private registry is named by.
func servedFile(t *testing.T, body string) (host string, served *atomic.Int32) {
	t.Helper()
	served = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u.Host, served
}

func (e *depsEnv) setup(t *testing.T, files map[string]string, command string) (activities.SetupOutput, error) {
	t.Helper()
	var fs []workspace.File
	for p, d := range files {
		fs = append(fs, workspace.File{Path: p, Data: []byte(d)})
	}
	id, err := e.acts.Store.PutSnapshot(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.tenv.ExecuteActivity(e.acts.Setup, activities.SetupInput{InputSnapshot: id, Command: command, Language: "python"})
	if err != nil {
		return activities.SetupOutput{}, err
	}
	var out activities.SetupOutput
	if err := v.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func (e *depsEnv) snapshotFiles(t *testing.T, id string) map[string]string {
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

// TestSetupGeneratesAndCaches: a project's setup, on the bubblewrap
// backend, fetches a file through the egress proxy from a server on the
// loopback named as a private registry and generates a module from it;
// the snapshot it returns holds the module, and the project's tests,
// checked over it, import it; the binary file it also writes is not
// kept, and its note counts it. The same setup of the same project
// applies the kept changes without running (the server is asked once); a
// project with any file changed, one the setup does not read among them,
// runs it again.
// A setup that fails is a non-retryable SetupFailed error naming its
// exit status, the end of its output and what to do.
func TestSetupGeneratesAndCaches(t *testing.T) {
	host, served := servedFile(t, "VERSION = '4.2'\n")
	e := newDepsEnv(t, "bwrap", []string{host}, nil)
	script := "mkdir -p gen && python3 -c \"import urllib.request; " +
		"open('gen/version.py', 'w').write(urllib.request.urlopen('http://" + host + "/version').read().decode())\"\n" +
		"printf 'a\\000b' > gen/blob.bin\n"
	project := map[string]string{
		activities.SetupScript: script,
		"requirements.txt":     "# nothing yet\n",
		"app.py":               "from gen.version import VERSION\n\n\ndef version():\n    return VERSION\n",
		"test_app.py":          "from app import version\n\n\ndef test_version():\n    assert version() == '4.2'\n",
	}
	out, err := e.setup(t, project, "sh "+activities.SetupScript)
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	t.Logf("first setup: %+v", out)
	if out.Cached || !strings.HasPrefix(out.Note, "ran in ") || !strings.HasSuffix(out.Note, "1 file changed; 1 not kept (binary files, tool caches)") || strings.Join(out.Changed, ",") != "gen/version.py" || served.Load() != 1 {
		t.Errorf("first setup: %+v, served %d times", out, served.Load())
	}
	files := e.snapshotFiles(t, out.Snapshot)
	if files["gen/version.py"] != "VERSION = '4.2'\n" || files["app.py"] != project["app.py"] {
		t.Errorf("the workspace after the setup: %q", files)
	}
	if s := e.check(t, "python", files); !s.Passed {
		t.Errorf("the tests over the setup's workspace: stage %s\n%s", s.Stage, s.Output)
	}

	again, err := e.setup(t, project, "sh "+activities.SetupScript)
	if err != nil {
		t.Fatalf("second setup: %v", err)
	}
	t.Logf("second setup: %+v", again)
	if !again.Cached || again.Note != "cached, 1 file changed" || served.Load() != 1 || again.Snapshot != out.Snapshot {
		t.Errorf("second setup: %+v, served %d times (want the cache, once)", again, served.Load())
	}

	// Another file, one neither the script nor the manifests name.
	project["README.md"] = "the app\n"
	changed, err := e.setup(t, project, "sh "+activities.SetupScript)
	if err != nil {
		t.Fatalf("setup of a changed project: %v", err)
	}
	if changed.Cached || served.Load() != 2 {
		t.Errorf("a project with a file changed: %+v, served %d times (want a run)", changed, served.Load())
	}
	if files := e.snapshotFiles(t, changed.Snapshot); files["gen/version.py"] != "VERSION = '4.2'\n" || files["README.md"] != "the app\n" {
		t.Errorf("the workspace after the setup of the changed project: %q", files)
	}

	project["gen/version.py"] = "VERSION = 'mine'\n"
	third, err := e.setup(t, project, "sh "+activities.SetupScript)
	if err != nil {
		t.Fatalf("third setup: %v", err)
	}
	if third.Cached || served.Load() != 3 {
		t.Errorf("a project holding the file the setup makes: %+v, served %d times (want a run)", third, served.Load())
	}

	_, err = e.setup(t, project, "echo 'codegen: no schema found' >&2; exit 3")
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != activities.ErrTypeSetupFailed || !app.NonRetryable() {
		t.Fatalf("a failing setup: %v", err)
	}
	t.Logf("failing setup: %s", app.Message())
	for _, want := range []string{"setup failed", "exited with status 3", "codegen: no schema found", "without the setup"} {
		if !strings.Contains(app.Message(), want) {
			t.Errorf("the failure says no %q:\n%s", want, app.Message())
		}
	}
}

// TestSetupNotKeptWhenItMayHaveGoneOtherwise: a setup the egress proxy
// refused a host to, or one run without network, may have left less than
// it would with it: the same setup of the same project runs again.
func TestSetupNotKeptWhenItMayHaveGoneOtherwise(t *testing.T) {
	unlisted, served := servedFile(t, "x\n")
	e := newDepsEnv(t, "bwrap", nil, nil)
	project := map[string]string{"app.py": "x = 1\n"}
	fetch := "mkdir -p gen && echo 'X = 1' > gen/x.py && (python3 -c \"import urllib.request; urllib.request.urlopen('http://" +
		unlisted + "/x')\" 2>/dev/null || true)"
	for _, tc := range []struct {
		name, command, note string
		noEgress            bool
	}{
		{"refused", fetch, "the egress proxy refused", false},
		{"no network", "mkdir -p gen && echo 'X = 2' > gen/x.py", "without network", true},
	} {
		if tc.noEgress {
			e.acts.Egress = nil
		}
		for run := 1; run <= 2; run++ {
			out, err := e.setup(t, project, tc.command)
			if err != nil {
				t.Fatalf("%s, run %d: %v", tc.name, run, err)
			}
			if out.Cached || !strings.Contains(out.Note, tc.note) {
				t.Errorf("%s, run %d: %+v (want a run, noted %q)", tc.name, run, out, tc.note)
			}
		}
	}
	if served.Load() != 0 {
		t.Errorf("the unlisted server was reached %d times", served.Load())
	}
}
