package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
)

// local is one data dir in local mode: no TEMPORAL_ADDRESS, so every
// command uses the data dir's background server.
type local struct {
	t   testing.TB
	bin string
	dir string
	env []string
}

// newLocal prepares a data dir whose commands use model. The background
// server it gets is stopped when the test ends; the idle timeout is a
// safety net should that fail.
func newLocal(t testing.TB, model *llmtest.Server, extraEnv ...string) *local {
	t.Helper()
	return newLocalOf(t, testenv.Binary(t), model, extraEnv...)
}

// newLocalOf is newLocal with the autocoder executable bin.
func newLocalOf(t testing.TB, bin string, model *llmtest.Server, extraEnv ...string) *local {
	t.Helper()
	dir := t.TempDir()
	l := &local{t: t, bin: bin, dir: dir, env: cleanEnv(
		"AUTOCODER_DATA_DIR="+dir,
		"AUTOCODER_DEV_PORT="+strconv.Itoa(testenv.FreePort(t)),
		"AUTOCODER_UI_PORT="+strconv.Itoa(testenv.FreePort(t)),
		"AUTOCODER_IDLE_TIMEOUT=2m",
		"OPENAI_BASE_URL="+model.URL(),
		"OPENAI_API_KEY=test-key",
	)}
	l.env = append(l.env, extraEnv...)
	t.Cleanup(func() {
		if a, err := l.address(); err == nil {
			_ = syscall.Kill(a.PID, syscall.SIGCONT) // in case a test stopped it
		}
		if out, err := l.command(context.Background(), "dev", "stop").CombinedOutput(); err != nil {
			t.Errorf("dev stop: %v\n%s", err, out)
		}
		if t.Failed() {
			if log, err := os.ReadFile(filepath.Join(dir, "autocoder.log")); err == nil {
				t.Logf("server log:\n%s", tail(string(log), 60))
			}
		}
	})
	return l
}

func (l *local) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, l.bin, args...)
	cmd.Env = l.env
	return cmd
}

// serverAddress is the part of the address file the tests read.
type serverAddress struct {
	Frontend string
	PID      int
}

func (l *local) address() (serverAddress, error) {
	var a serverAddress
	b, err := os.ReadFile(filepath.Join(l.dir, "server.json"))
	if err != nil {
		return a, err
	}
	return a, json.Unmarshal(b, &a)
}

// serversStarted counts the servers that ever served this data dir.
func (l *local) serversStarted() int {
	log, err := os.ReadFile(filepath.Join(l.dir, "autocoder.log"))
	if err != nil {
		l.t.Fatal(err)
	}
	return strings.Count(string(log), `msg="local server ready"`)
}

// follower is a following `run` started in the background; its stderr is
// scanned for the task id and the lines the test waits for.
type follower struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr strings.Builder
	id     chan string
	lines  chan string
	done   chan struct{}
}

func (l *local) startRun(ctx context.Context, args ...string) *follower {
	l.t.Helper()
	c := &follower{cmd: l.command(ctx, append([]string{"run"}, args...)...),
		id: make(chan string, 1), lines: make(chan string, 1000), done: make(chan struct{})}
	c.cmd.Stdout = &c.stdout
	pipe, err := c.cmd.StderrPipe()
	if err != nil {
		l.t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		l.t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			c.mu.Lock()
			c.stderr.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			if m := startedRE.FindStringSubmatch(sc.Text()); m != nil {
				c.id <- m[1]
			}
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
	}()
	return c
}

// waitLine waits for a stderr line holding s.
func (c *follower) waitLine(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(3 * time.Minute)
	for {
		select {
		case line := <-c.lines:
			if strings.Contains(line, s) {
				return
			}
		case <-c.done:
			t.Fatalf("run ended before printing %q:\n%s", s, c.errText())
		case <-timeout:
			t.Fatalf("run did not print %q within 3 minutes:\n%s", s, c.errText())
		}
	}
}

func (c *follower) taskID(t *testing.T) string {
	t.Helper()
	select {
	case id := <-c.id:
		c.id <- id
		return id
	case <-c.done:
		t.Fatalf("run ended before starting a task:\n%s", c.errText())
	case <-time.After(3 * time.Minute):
		t.Fatalf("run started no task within 3 minutes:\n%s", c.errText())
	}
	return ""
}

// wait returns the exit code once the process has ended.
func (c *follower) wait(t *testing.T) int {
	t.Helper()
	<-c.done
	err := c.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode()
	case err != nil:
		t.Fatalf("run: %v", err)
	}
	return 0
}

func (c *follower) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestTwoClientsShareOneServer: two runs started 0.2 s apart from two
// processes share the data dir's one server; SIGKILL of the first client
// mid-task affects neither task, and resume writes the first task's files.
func TestTwoClientsShareOneServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sc := pythonScenario
	l := newLocal(t, llmtest.New(t, pythonScenario.scriptRetryAfter(3*time.Second)))
	outA, outB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")

	a := l.startRun(ctx, sc.task, "--out", outA)
	time.Sleep(200 * time.Millisecond)
	b := l.startRun(ctx, sc.task, "--out", outB)

	idA := a.taskID(t)
	a.waitLine(t, "[reflecting]")
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.wait(t)

	if code := b.wait(t); code != 0 || !strings.Contains(b.stdout.String(), "succeeded") {
		t.Fatalf("second run: exit %d\nstdout:\n%s\nstderr:\n%s", code, b.stdout.String(), b.errText())
	}
	checkFiles(t, sc, readDir(t, outB, sc))

	var rout, rerr bytes.Buffer
	resume := l.command(ctx, "resume", idA, "--out", outA)
	resume.Stdout, resume.Stderr = &rout, &rerr
	if err := resume.Run(); err != nil {
		t.Fatalf("resume %s: %v\nstdout:\n%s\nstderr:\n%s\nfirst run:\n%s", idA, err, rout.String(), rerr.String(), a.errText())
	}
	if !strings.Contains(rout.String(), "succeeded in 2 iteration(s)") {
		t.Errorf("resume output:\n%s", rout.String())
	}
	checkFiles(t, sc, readDir(t, outA, sc))
	if n := l.serversStarted(); n != 1 {
		t.Errorf("%d servers served the data dir, want 1", n)
	}
}

// TestLostContactIsNotFailure: the server stops answering (SIGSTOP) while
// run follows a task. Stopped for longer than the client's bounded wait,
// the client exits 3 with the lost-contact message, and resume finishes
// the task once the server continues; stopped for less, the client says
// contact is back and completes. Never "task failed".
func TestLostContactIsNotFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		contactTimeout time.Duration
		silence        time.Duration // 0: until the client exits
	}{
		{"longer than the wait", 6 * time.Second, 0},
		{"shorter than the wait", 2 * time.Minute, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
			defer cancel()
			sc := pythonScenario
			l := newLocal(t, llmtest.New(t, pythonScenario.scriptRetryAfter(2*time.Second)), "AUTOCODER_CONTACT_TIMEOUT="+tc.contactTimeout.String())
			out := filepath.Join(t.TempDir(), "out")

			run := l.startRun(ctx, sc.task, "--out", out)
			id := run.taskID(t)
			run.waitLine(t, "[reflecting]")
			a, err := l.address()
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(a.PID, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := time.Now()
			if tc.silence > 0 {
				time.Sleep(tc.silence)
			} else {
				<-run.done
			}
			if err := syscall.Kill(a.PID, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			code := run.wait(t)
			waited := time.Since(stopped)
			stderr := run.errText()
			if strings.Contains(stderr, "task failed") {
				t.Fatalf("run reported a failure of a task that did not fail:\n%s", stderr)
			}
			lost := fmt.Sprintf("lost contact with Temporal at %s; retrying", a.Frontend)
			if tc.silence > 0 {
				restored := fmt.Sprintf("contact with Temporal at %s restored", a.Frontend)
				if code != 0 || !strings.Contains(stderr, lost) || !strings.Contains(stderr, restored) {
					t.Fatalf("run: exit %d, want 0 with %q and %q\nstderr:\n%s", code, lost, restored, stderr)
				}
				checkFiles(t, sc, readDir(t, out, sc))
				return
			}
			want := fmt.Sprintf("lost contact with Temporal at %s; the task may still be running: autocoder resume %s", a.Frontend, id)
			if code != 3 || !strings.Contains(stderr, want) {
				t.Fatalf("run: exit %d after %s of silence, want 3 and %q\nstderr:\n%s", code, waited.Round(time.Second), want, stderr)
			}
			if waited < tc.contactTimeout {
				t.Errorf("run gave up after %s, before its bounded wait of %s", waited, tc.contactTimeout)
			}
			var rout, rerr bytes.Buffer
			resume := l.command(ctx, "resume", id, "--out", out)
			resume.Stdout, resume.Stderr = &rout, &rerr
			if err := resume.Run(); err != nil {
				t.Fatalf("resume %s: %v\nstdout:\n%s\nstderr:\n%s", id, err, rout.String(), rerr.String())
			}
			checkFiles(t, sc, readDir(t, out, sc))
		})
	}
}

// TestTranscriptFollowLosesContact: transcript --follow of a running task
// whose server stops answering (SIGSTOP) says so, keeps trying for the
// contact timeout and exits 3 naming resume, as run and watch do.
func TestTranscriptFollowLosesContact(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	const contactTimeout = 6 * time.Second
	l := newLocal(t, llmtest.New(t, pythonScenario.scriptRetryAfter(2*time.Second)), "AUTOCODER_CONTACT_TIMEOUT="+contactTimeout.String())
	run := l.startRun(ctx, pythonScenario.task, "--out", filepath.Join(t.TempDir(), "out"))
	id := run.taskID(t)
	run.waitLine(t, "[reflecting]")

	var out, errOut bytes.Buffer
	// Bounded well past the contact timeout: a client that waits for ever
	// is killed and fails the test.
	followCtx, stopFollow := context.WithTimeout(ctx, 90*time.Second)
	defer stopFollow()
	follow := l.command(followCtx, "transcript", id, "--follow")
	follow.Stdout, follow.Stderr = &out, &errOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	a, err := l.address()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the transcript so far is printed
	if err := syscall.Kill(a.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	err = follow.Wait()
	waited := time.Since(stopped)
	if err := syscall.Kill(a.PID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	want := fmt.Sprintf("lost contact with Temporal at %s; the task may still be running: autocoder resume %s", a.Frontend, id)
	if code != 3 || !strings.Contains(errOut.String(), want) {
		t.Fatalf("transcript --follow: exit %d after %s of silence (%v), want 3 and %q\nstderr:\n%s", code, waited.Round(time.Second), err, want, errOut.String())
	}
	if waited < contactTimeout {
		t.Errorf("gave up after %s, before the contact timeout of %s", waited.Round(time.Second), contactTimeout)
	}
	if !strings.Contains(out.String(), "── step 1") {
		t.Errorf("printed no conversation before the server stopped:\n%s", out.String())
	}
	run.wait(t)
}

// TestResumeWritesIntoTheProject: a run on a project (--dir) stops
// following mid-task; resume, from another directory and without --out,
// writes the task's files back into the project, as the run would have.
func TestResumeWritesIntoTheProject(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	sc := pythonScenario
	l := newLocal(t, llmtest.New(t, sc.scriptRetryAfter(3*time.Second)))
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "NOTES.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := l.startRun(ctx, sc.task, "--dir", project)
	id := run.taskID(t)
	run.waitLine(t, "[reflecting]")
	if err := run.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	run.wait(t)

	elsewhere := t.TempDir()
	var rout, rerr bytes.Buffer
	resume := l.command(ctx, "resume", id)
	resume.Dir, resume.Stdout, resume.Stderr = elsewhere, &rout, &rerr
	if err := resume.Run(); err != nil {
		t.Fatalf("resume %s: %v\nstdout:\n%s\nstderr:\n%s", id, err, rout.String(), rerr.String())
	}
	if !strings.Contains(rout.String(), "written to "+project) {
		t.Errorf("resume output names no project:\n%s", rout.String())
	}
	checkFiles(t, sc, readDir(t, project, sc))
	if b, err := os.ReadFile(filepath.Join(project, "NOTES.txt")); err != nil || string(b) != "mine\n" {
		t.Errorf("the project's own file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, id)); !os.IsNotExist(err) {
		t.Errorf("resume wrote ./%s as well (%v)", id, err)
	}
}

// productLine matches every line a piped run prints itself.
var productLine = regexp.MustCompile(`^(starting the local server for .* \(log: .*\)…` +
	`|local server at 127\.0\.0\.1:\d+, Web UI at http://127\.0\.0\.1:\d+` +
	`|language: [A-Za-z+/#]+ \(.*; --lang chooses another\)` +
	`|task ` + taskIDPattern + ` started` +
	`|web UI: http://127\.0\.0\.1:\d+/namespaces/default/workflows/` + taskIDPattern +
	`|\[[a-z]+\]( step \d+/\d+ · iteration \d+/\d+( · turn \d+(: .+)?)?)?( · [0-9.]+k? tokens( · cost (\$[0-9.]+|unknown|\$[0-9.]+ and unknown))?)?` +
	`|  [✓✗] step \d+, iteration \d+: .*` +
	`|✔ task ` + taskIDPattern + ` succeeded in \d+ iteration\(s\).*` +
	`|  \d+ file\(s\) written to .*` +
	`|  tokens: \d+ in, \d+ out, cost (\$[0-9.]+|unknown|\$[0-9.]+ and unknown))$`)

// TestTwoDataDirs: with data dir A's server running on the configured
// ports, a run on data dir B (same configured ports) uses B's own server
// and succeeds. Its whole output, server start included, holds only the
// product's own lines: no log line of the SDK, the server or the sandbox.
func TestTwoDataDirs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	model := llmtest.New(t, sc.script())
	a := newLocal(t, model)
	if out, err := a.command(ctx, "list").CombinedOutput(); err != nil {
		t.Fatalf("list on A: %v\n%s", err, out)
	}
	b := newLocal(t, model)
	b.env = append(b.env, portsOf(a.env)...) // the later setting wins

	out := filepath.Join(t.TempDir(), "out")
	run := b.command(ctx, "run", sc.task, "--out", out)
	var all bytes.Buffer
	run.Stdout, run.Stderr = &all, &all
	if err := run.Run(); err != nil {
		t.Fatalf("run on B: %v\n%s", err, all.String())
	}
	checkFiles(t, sc, readDir(t, out, sc))
	addrA, err := a.address()
	if err != nil {
		t.Fatal(err)
	}
	addrB, err := b.address()
	if err != nil {
		t.Fatal(err)
	}
	if addrA.PID == addrB.PID || addrA.Frontend == addrB.Frontend {
		t.Errorf("B used A's server: A %+v, B %+v", addrA, addrB)
	}
	if listed, err := a.command(ctx, "list").Output(); err != nil || strings.Contains(string(listed), "autocoder-") {
		t.Errorf("A's server lists B's task (%v):\n%s", err, listed)
	}
	for _, line := range strings.Split(strings.TrimRight(all.String(), "\n"), "\n") {
		if !productLine.MatchString(line) {
			t.Errorf("run printed a line that is not the product's own: %q", line)
		}
	}
	if t.Failed() {
		t.Logf("run output:\n%s", all.String())
	}
}

// portsOf returns the port settings of env.
func portsOf(env []string) []string {
	var out []string
	for _, kv := range env {
		if strings.HasPrefix(kv, "AUTOCODER_DEV_PORT=") || strings.HasPrefix(kv, "AUTOCODER_UI_PORT=") {
			out = append(out, kv)
		}
	}
	return out
}

// TestInterruptStopsOnlyFollowing: Ctrl-C on run stops following and says
// how to re-attach or cancel; the task goes on in the server and resume
// writes its files.
func TestInterruptStopsOnlyFollowing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sc := pythonScenario
	l := newLocal(t, llmtest.New(t, pythonScenario.scriptRetryAfter(2*time.Second)))
	out := filepath.Join(t.TempDir(), "out")

	run := l.startRun(ctx, sc.task, "--out", out)
	id := run.taskID(t)
	run.waitLine(t, "[reflecting]")
	if err := run.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	code := run.wait(t)
	for _, want := range []string{"autocoder resume " + id, "autocoder cancel " + id} {
		if code != 130 || !strings.Contains(run.errText(), want) {
			t.Fatalf("interrupted run: exit %d, want 130 and %q\nstderr:\n%s", code, want, run.errText())
		}
	}
	var rout, rerr bytes.Buffer
	resume := l.command(ctx, "resume", id, "--out", out)
	resume.Stdout, resume.Stderr = &rout, &rerr
	if err := resume.Run(); err != nil || !strings.Contains(rout.String(), "succeeded in 2 iteration(s)") {
		t.Fatalf("resume %s: %v\nstdout:\n%s\nstderr:\n%s", id, err, rout.String(), rerr.String())
	}
	checkFiles(t, sc, readDir(t, out, sc))
}

// TestIdleServerStops: the background server stays up while a task waits
// for a person, stops by itself once no task is open and no client came
// for the idle period, and the next command starts a new one.
func TestIdleServerStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	sc := pythonScenario
	const idle = 3 * time.Second
	l := newLocal(t, llmtest.New(t, sc.script()), "AUTOCODER_IDLE_TIMEOUT="+idle.String())
	running := func() bool { return l.command(ctx, "dev", "status").Run() == nil }

	out, err := l.command(ctx, "run", "--detach", "--approve-plan", sc.task).Output()
	if err != nil {
		t.Fatalf("run --detach: %v", err)
	}
	id := strings.TrimSpace(string(out))
	time.Sleep(3 * idle)
	if !running() {
		t.Fatal("the server stopped while a task waited for approval")
	}
	if out, err := l.command(ctx, "cancel", "--force", id).CombinedOutput(); err != nil {
		t.Fatalf("cancel: %v\n%s", err, out)
	}
	deadline := time.Now().Add(time.Minute)
	for running() {
		if time.Now().After(deadline) {
			t.Fatalf("the server still runs a minute after its last task ended (idle timeout %s)", idle)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if out, err := l.command(ctx, "list").CombinedOutput(); err != nil || !strings.Contains(string(out), id) {
		t.Fatalf("list after the idle stop: %v\n%s", err, out)
	}
	if n := l.serversStarted(); n != 2 {
		t.Errorf("%d servers served the data dir, want 2 (one stopped idle, one started by list)", n)
	}
}

// TestFailedStartShowsOnlyItsOwnLog: a local server that fails to start
// (its configured docker daemon does not answer, say) is reported with the
// end of what it wrote to the log, without the lines an earlier server
// left in the same file.
func TestFailedStartShowsOnlyItsOwnLog(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const missing = "unix:///nonexistent/docker.sock"
	l := newLocal(t, llmtest.New(t, pythonScenario.script()), "AUTOCODER_SANDBOX=docker", "DOCKER_HOST="+missing)
	earlier := []string{
		`time=2026-01-02T03:04:05Z level=INFO msg="local server ready" temporal=127.0.0.1:7233`,
		`time=2026-01-02T03:09:05Z level=INFO msg="earlier server's line one"`,
		`time=2026-01-02T03:09:06Z level=INFO msg="earlier server's line two"`,
		`time=2026-01-02T03:09:07Z level=INFO msg="earlier server's line three"`,
		`time=2026-01-02T03:09:08Z level=INFO msg="local server stops: idle" idle_timeout=5m0s`,
	}
	if err := os.WriteFile(filepath.Join(l.dir, "autocoder.log"), []byte(strings.Join(earlier, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	run := l.command(ctx, "run", "--lang", "python", "write add(a, b)")
	run.Stdout, run.Stderr = &stdout, &stderr
	err := run.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("run: %v, want exit 3\nstderr:\n%s", err, stderr.String())
	}
	got := stderr.String()
	if !strings.Contains(got, "the local server did not start") || !strings.Contains(got, strings.TrimPrefix(missing, "unix://")) {
		t.Errorf("stderr does not say the server did not start for want of the docker daemon at %s:\n%s", missing, got)
	}
	for _, line := range earlier {
		if strings.Contains(got, line) {
			t.Errorf("stderr shows the earlier server's line %q:\n%s", line, got)
		}
	}
}
