package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
)

// runVersionsCLI runs a command line in a shell whose environment is env,
// with a data dir of its own.
func runVersionsCLI(t *testing.T, env map[string]string, args ...string) cliRun {
	t.Helper()
	var out, errOut bytes.Buffer
	f := NewFactory(config{}, IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	env["HOME"] = t.TempDir()
	f.Getenv = envOf(env)
	t.Cleanup(f.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := execute(ctx, f, args)
	return cliRun{code, out.String(), errOut.String()}
}

func TestVersionsCommand(t *testing.T) {
	// An npm registry, named for JavaScript by registries.index.
	var asked atomic.Int32
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/left-pad" {
			http.NotFound(w, r)
			return
		}
		asked.Add(1)
		w.Header().Set("Content-Type", "application/vnd.npm.install-v1+json")
		fmt.Fprint(w, `{"name":"left-pad","dist-tags":{"latest":"1.4.0"},"versions":{"1.4.0":{},"2.0.0-rc.1":{}}}`)
	}))
	t.Cleanup(reg.Close)
	env := map[string]string{"AUTOCODER_REGISTRY_INDEXES": "javascript=" + reg.URL, "AUTOCODER_DATA_DIR": t.TempDir()}

	r := runVersionsCLI(t, env, "versions", "js", "left-pad", "no-such-pad")
	r.want(t, exitOK, nil, []string{"warning: no-such-pad: " + reg.URL + " has no such package"})
	if r.out != "left-pad 1.4.0\n" {
		t.Errorf("stdout %q, want one PKG VERSION line", r.out)
	}
	// The second asks the store, not the registry.
	r = runVersionsCLI(t, env, "--verbose", "versions", "javascript", "left-pad")
	r.want(t, exitOK, []string{"left-pad 1.4.0 " + reg.URL + " (cached)\n"}, nil)
	if asked.Load() != 1 {
		t.Errorf("the registry was asked %d times, want once", asked.Load())
	}

	r = runVersionsCLI(t, env, "versions", "js", "left-pad", "no-such-pad", "--json")
	var shown []shownVersion
	if err := json.Unmarshal([]byte(r.out), &shown); err != nil || len(shown) != 2 {
		t.Fatalf("--json: %v: %s", err, r.out)
	}
	if shown[0].Version != "1.4.0" || !shown[0].Cached || shown[1].Version != "" || !strings.Contains(shown[1].Warning, "no such package") {
		t.Errorf("--json: %+v", shown)
	}

	runVersionsCLI(t, env, "versions", "js", "no-such-pad").want(t, exitTaskFailed, nil, []string{"no package's version was found"})
	// A registry that cannot be reached is a warning that says so.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "sparse+http://" + l.Addr().String() + "/"
	l.Close()
	runVersionsCLI(t, map[string]string{"AUTOCODER_REGISTRY_INDEXES": "rust=" + closed, "AUTOCODER_VERSIONS_TTL": "0"}, "versions", "rust", "serde").
		want(t, exitTaskFailed, nil, []string{"warning: serde: no version from http://" + l.Addr().String() + ": cannot reach the registry"})
	runVersionsCLI(t, env, "versions", "cpp", "fmt").want(t, exitUsage, nil, []string{"C++ has no package registry"})
	runVersionsCLI(t, env, "versions", "cobol", "x").want(t, exitUsage, nil, []string{`unknown language "cobol"`})
}

// TestVersionsOfAGoModuleForReal asks the module proxy this machine's Go
// is configured with: what `go list -m MODULE@latest` says is printed.
func TestVersionsOfAGoModuleForReal(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "golang.org/x/text@latest")
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	testenv.RequireService(t, "the Go module proxy", err)
	r := runVersionsCLI(t, map[string]string{"AUTOCODER_DATA_DIR": t.TempDir()}, "versions", "go", "golang.org/x/text")
	r.want(t, exitOK, nil, nil)
	if want := "golang.org/x/text " + strings.TrimSpace(string(out)) + "\n"; r.out != want {
		t.Errorf("stdout %q, want %q", r.out, want)
	}
}
