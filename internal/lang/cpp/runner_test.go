package cpp_test

import (
	"context"
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

var (
	runnerOnce sync.Once
	runner     sandbox.Runner
	runnerErr  error
)

// bwrapRunner is one bwrap runner for the package's tests, with the host's
// C/C++ toolchain checked first; a missing one fails in CI.
func bwrapRunner(t *testing.T) sandbox.Runner {
	t.Helper()
	runnerOnce.Do(func() {
		check := cpp.Language().Sandbox.HostCheck
		if out, err := exec.Command(check[0], check[1:]...).CombinedOutput(); err != nil {
			runnerErr = &toolchainError{err: err, out: string(out)}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		runner, runnerErr = sandbox.New(ctx, sandbox.Config{Backend: "bwrap", PoolSize: -1,
			Profiles: sandbox.ProfilesOf([]lang.Language{cpp.Language()})})
	})
	testenv.RequireService(t, "bwrap with the C/C++ toolchain", runnerErr)
	return runner
}

type toolchainError struct {
	err error
	out string
}

func (e *toolchainError) Error() string { return "host check: " + e.err.Error() + ": " + e.out }

func TestMain(m *testing.M) {
	code := m.Run()
	if runner != nil {
		runner.Close()
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
// sandbox and returns its exit code and output, stderr after stdout as
// the check reads them.
func runIn(t *testing.T, files []workspace.File, cmd []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := bwrapRunner(t).Run(ctx, sandbox.Spec{Profile: "cpp", Files: files, Cmd: cmd})
	if err != nil {
		t.Fatalf("run %v: %v", cmd, err)
	}
	if res.TimedOut || res.OOMKilled {
		t.Fatalf("run %v: timed out %v, out of memory %v:\n%s%s", cmd, res.TimedOut, res.OOMKilled, res.Stdout, res.Stderr)
	}
	out := res.Stdout
	if res.Stderr != "" {
		out += "\n" + res.Stderr
	}
	return res.ExitCode, out
}
