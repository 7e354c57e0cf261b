package cpp_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/cpp"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// runners are the package's sandbox runners, one per backend, built on
// first use; a backend that cannot start is remembered by its error.
var (
	runnersMu  sync.Mutex
	runners    = map[string]sandbox.Runner{}
	runnerErrs = map[string]error{}
)

// runnerOn is the runner of a backend that serves C/C++; one that is
// missing fails in CI. On bwrap the host's toolchain is checked first.
func runnerOn(t *testing.T, backend string) sandbox.Runner {
	t.Helper()
	runnersMu.Lock()
	defer runnersMu.Unlock()
	r, ok := runners[backend]
	if !ok && runnerErrs[backend] == nil {
		r, runnerErrs[backend] = newRunner(backend)
		runners[backend] = r
	}
	testenv.RequireService(t, backend+" backend with the C/C++ toolchain", runnerErrs[backend])
	return r
}

func newRunner(backend string) (sandbox.Runner, error) {
	l := cpp.Language()
	if backend == "bwrap" {
		check := l.Sandbox.HostCheck
		if out, err := exec.Command(check[0], check[1:]...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("host check %v: %w: %s", check, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return sandbox.New(ctx, sandbox.Config{Backend: backend, PoolSize: -1,
		Profiles: sandbox.ProfilesOf([]lang.Language{l})})
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, r := range runners {
		if r != nil {
			r.Close()
		}
	}
	os.Exit(code)
}

// project reads a directory's files as a workspace.
func project(t *testing.T, dir string) []workspace.File {
	t.Helper()
	var files []workspace.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, workspace.File{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// runIn runs cmd (nil: the default test command) over files in the cpp
// sandbox on bwrap; see runOn.
func runIn(t *testing.T, files []workspace.File, cmd []string) (int, string) {
	t.Helper()
	return runOn(t, "bwrap", files, cmd)
}

// runOn runs cmd (nil: the default test command) over files in the cpp
// sandbox of a backend and returns its exit code and output, stderr after
// stdout as the check reads them. A missing image fails in CI.
func runOn(t *testing.T, backend string, files []workspace.File, cmd []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runnerOn(t, backend).Run(ctx, sandbox.Spec{Profile: "cpp", Files: files, Cmd: cmd})
	if errors.Is(err, sandbox.ErrImageMissing) {
		testenv.RequireService(t, "the cpp sandbox image", err)
	}
	if err != nil {
		t.Fatalf("run %v on %s: %v", cmd, backend, err)
	}
	if res.TimedOut || res.OOMKilled {
		t.Fatalf("run %v on %s: timed out %v, out of memory %v:\n%s%s", cmd, backend, res.TimedOut, res.OOMKilled, res.Stdout, res.Stderr)
	}
	out := res.Stdout
	if res.Stderr != "" {
		out += "\n" + res.Stderr
	}
	return res.ExitCode, out
}
