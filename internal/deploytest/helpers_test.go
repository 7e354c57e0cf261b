package deploytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
)

// repoRoot is the checkout the deployment files live in.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// needTool returns the path of a command, or reports it unavailable.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testenv.RequireService(t, name, err)
	}
	return p
}

// needDocker checks that the Docker engine answers.
func needDocker(t *testing.T) {
	t.Helper()
	needTool(t, "docker")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput(); err != nil {
		testenv.RequireService(t, "the docker engine", fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out))))
	}
}

// result is a finished command.
type result struct {
	stdout, stderr string
	code           int
}

// run runs a command and returns its output and exit code; only a failure
// to start it, or the deadline, fails the test.
func run(ctx context.Context, t *testing.T, env []string, dir string, name string, args ...string) result {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	// Scripts start children (docker build) that hold the output pipes: on
	// the deadline the whole process group goes, and Wait stops waiting.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("%s %s: %v (stderr: %s)", name, strings.Join(args, " "), ctx.Err(), tail(r.stderr))
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// mustRun is run that fails the test on a non-zero exit.
func mustRun(ctx context.Context, t *testing.T, env []string, dir string, name string, args ...string) result {
	t.Helper()
	r := run(ctx, t, env, dir, name, args...)
	if r.code != 0 {
		t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), r.code, tail(r.stdout), tail(r.stderr))
	}
	return r
}

// tail keeps the end of long output, where errors are.
func tail(s string) string {
	const max = 4000
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}

// testContext ends a little before the test binary's deadline, so a hung
// command fails its test with output instead of a panic.
func testContext(t *testing.T, limit time.Duration) context.Context {
	t.Helper()
	deadline := time.Now().Add(limit)
	if d, ok := t.Deadline(); ok && d.Add(-10*time.Second).Before(deadline) {
		deadline = d.Add(-10 * time.Second)
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}
