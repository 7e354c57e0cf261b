package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// cluster is a real Temporal server, a scripted model and a worker process
// running the built binary; tests drive it with more processes of the CLI.
type cluster struct {
	t       *testing.T
	ts      *temporaltest.TestServer
	bin     string
	env     []string
	model   *llmtest.Server
	workers *testenv.Fleet
}

// stopWorkers stops every worker started so far.
func (c *cluster) stopWorkers() {
	if err := c.workers.StopAll(time.Minute); err != nil {
		c.t.Errorf("stop workers: %v", err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.Cleanup()
	os.Exit(code)
}

func binary(t *testing.T) string { return testenv.Binary(t) }

func freePort(t *testing.T) int { return testenv.FreePort(t) }

func cleanEnv(extra ...string) []string { return testenv.CleanEnv(extra...) }

func newCluster(t *testing.T, script llmtest.Script, extraEnv ...string) *cluster {
	t.Helper()
	return newClusterWith(t, script, nil, extraEnv...)
}

// newClusterWith is newCluster whose workers run with workerArgs
// (worker --config FILE).
func newClusterWith(t *testing.T, script llmtest.Script, workerArgs []string, extraEnv ...string) *cluster {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	model := llmtest.New(t, script)
	c := &cluster{t: t, ts: ts, bin: binary(t), model: model, env: testenv.ClusterEnv(
		ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), t.TempDir(), model.URL(), extraEnv...)}
	c.workers = testenv.NewFleet(t, c.bin, c.env, workerArgs...)
	c.startWorker()
	return c
}

// startWorker starts a worker process; it stops gracefully at cleanup.
func (c *cluster) startWorker() { c.workers.Start() }

// cli runs the binary to completion and returns stdout, stderr and the exit code.
func (c *cluster) cli(args ...string) (string, string, int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = c.env
	return runCaptured(c.t, cmd, args)
}

// runCaptured runs cmd to completion and returns its stdout, stderr and
// exit code; only a command that could not run fails the test.
func runCaptured(t *testing.T, cmd *exec.Cmd, args []string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.String(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("autocoder %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), 0
}

// mustCLI runs the binary and fails the test unless it exits 0.
func (c *cluster) mustCLI(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.cli(args...)
	if code != 0 {
		c.t.Fatalf("autocoder %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out
}

// start runs a task detached and returns its id.
func (c *cluster) start(args ...string) string {
	c.t.Helper()
	var res struct{ ID string }
	out := c.mustCLI(append([]string{"run", "--detach", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
		c.t.Fatalf("run --detach --json printed %q: %v", out, err)
	}
	return res.ID
}

func (c *cluster) status(id string) workflows.Status {
	c.t.Helper()
	var st workflows.Status
	out := c.mustCLI("status", id, "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("decode status: %v\n%s", err, out)
	}
	return st
}

// waitFor polls the status until cond holds or a minute passes.
func (c *cluster) waitFor(id, what string, cond func(workflows.Status) bool) workflows.Status {
	c.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := c.status(id)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) || (st.Phase.Done() && !cond(st)) {
			last := ""
			if st.LastTest != nil {
				last = st.LastTest.Output
			}
			c.t.Fatalf("task %s: gave up waiting for %s; status: %+v\nlast output:\n%s", id, what, st, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waiting(kind string) func(workflows.Status) bool {
	return func(st workflows.Status) bool { return st.Pending != nil && st.Pending.Kind == kind }
}

func phase(p workflows.Phase) func(workflows.Status) bool {
	return func(st workflows.Status) bool { return st.Phase == p }
}
