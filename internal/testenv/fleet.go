package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ClusterEnv is the environment of a worker or CLI process in a test
// cluster: the Temporal server, a data dir and the scripted model, plus
// extra; nothing of this process's own settings leaks in.
func ClusterEnv(temporalAddr, namespace, dataDir, modelURL string, extra ...string) []string {
	return CleanEnv(append([]string{
		"TEMPORAL_ADDRESS=" + temporalAddr,
		"TEMPORAL_NAMESPACE=" + namespace,
		"AUTOCODER_DATA_DIR=" + dataDir,
		"OPENAI_BASE_URL=" + modelURL,
		"OPENAI_API_KEY=test-key",
		"AUTOCODER_MODEL=openai:gpt-4.1-mini",
	}, extra...)...)
}

// Worker is one `autocoder worker` OS process of a Fleet.
type Worker struct {
	cmd     *exec.Cmd
	Started time.Time
	log     string // path of its combined output
	done    chan struct{}
	waitErr error
}

// Fleet starts, stops, kills and restarts the worker processes of a test.
// At cleanup the workers still running are stopped gracefully, so their
// sandbox containers go with them, and a failed test shows each one's log.
type Fleet struct {
	t    testing.TB
	bin  string
	env  []string
	args []string
	dir  string
	mu   sync.Mutex
	all  []*Worker
}

// cleanupStop bounds a graceful stop at cleanup before SIGKILL.
const cleanupStop = time.Minute

// NewFleet runs workers of the binary bin with env and `worker` args.
func NewFleet(t testing.TB, bin string, env []string, args ...string) *Fleet {
	f := &Fleet{t: t, bin: bin, env: env, args: args, dir: t.TempDir()}
	t.Cleanup(func() {
		if err := f.StopAll(cleanupStop); err != nil {
			t.Log(err)
		}
		if t.Failed() {
			for i, w := range f.Workers() {
				t.Logf("worker %d (pid %d) log tail:\n%s", i, w.Pid(), tailFile(w.log, 40))
			}
		}
	})
	return f
}

// Start launches a new worker process and returns once it runs.
func (f *Fleet) Start() *Worker {
	f.t.Helper()
	f.mu.Lock()
	n := len(f.all)
	f.mu.Unlock()
	logPath := filepath.Join(f.dir, fmt.Sprintf("worker-%d.log", n))
	out, err := os.Create(logPath)
	if err != nil {
		f.t.Fatal(err)
	}
	cmd := exec.Command(f.bin, append([]string{"worker"}, f.args...)...)
	cmd.Env, cmd.Stdout, cmd.Stderr = f.env, out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		f.t.Fatalf("start worker: %v", err)
	}
	w := &Worker{cmd: cmd, Started: time.Now(), log: logPath, done: make(chan struct{})}
	go func() {
		w.waitErr = cmd.Wait()
		out.Close()
		close(w.done)
	}()
	f.mu.Lock()
	f.all = append(f.all, w)
	f.mu.Unlock()
	return w
}

// Workers are all the workers started so far, oldest first.
func (f *Fleet) Workers() []*Worker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.all)
}

// Current is the newest worker.
func (f *Fleet) Current() *Worker {
	ws := f.Workers()
	return ws[len(ws)-1]
}

// StopAll stops every worker still running, each gracefully within timeout.
func (f *Fleet) StopAll(timeout time.Duration) error {
	var errs []error
	for _, w := range f.Workers() {
		if !w.Exited() {
			errs = append(errs, w.Stop(timeout))
		}
	}
	return errors.Join(errs...)
}

// Owners are the sandbox owner labels ("host/pid") of every worker the
// fleet ran.
func (f *Fleet) Owners() []string {
	host, _ := os.Hostname()
	var out []string
	for _, w := range f.Workers() {
		out = append(out, host+"/"+strconv.Itoa(w.Pid()))
	}
	return out
}

// Pid is the worker's process id.
func (w *Worker) Pid() int { return w.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (w *Worker) Exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// Err is how the process ended; nil while it runs.
func (w *Worker) Err() error {
	if !w.Exited() {
		return nil
	}
	return w.waitErr
}

// Kill sends SIGKILL: no deferred cleanup, no graceful activity drain.
func (w *Worker) Kill() error {
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill worker: %w", err)
	}
	<-w.done
	return nil
}

// Stop asks for a graceful stop (SIGTERM lets in-flight activities finish)
// and waits for the process to exit, killing it after timeout.
func (w *Worker) Stop(timeout time.Duration) error {
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop worker: %w", err)
	}
	select {
	case <-w.done:
		return w.waitErr
	case <-time.After(timeout):
		_ = w.cmd.Process.Kill()
		<-w.done
		return fmt.Errorf("worker %d did not stop within %s", w.Pid(), timeout)
	}
}

func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
