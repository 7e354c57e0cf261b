package e2e

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// TestApprovePlanFromAnotherProcess: run --approve-plan --detach waits at the
// plan gate until a second process approves.
func TestApprovePlanFromAnotherProcess(t *testing.T) {
	t.Parallel()
	c := newCluster(t, pythonScenario.script())
	id := c.start("--lang", "python", "--approve-plan", pythonScenario.task)

	st := c.waitFor(id, "the plan gate", waiting(workflows.GatePlan))
	if !strings.Contains(st.Pending.Details, "Implement add") {
		t.Errorf("plan gate details %q do not show the plan", st.Pending.Details)
	}
	if got := c.model.Calls(); got != 1 {
		t.Errorf("model calls while waiting = %d, want 1 (the plan only)", got)
	}
	c.mustCLI("approve", id)
	st = c.waitFor(id, "success", phase(workflows.PhaseSucceeded))
	if st.Iteration != 2 {
		t.Errorf("iterations = %d, want 2", st.Iteration)
	}
}

// policyScenario's first code shells out, which the safety policy denies.
var policyScenario = scenario{
	lang: "python",
	task: "Write version() in ver.py returning the string 1, with a test.",
	plan: "1. Implement version in ver.py with a pytest test.",
	buggy: fence("ver.py", "import subprocess\n\n\ndef version():\n    return subprocess.run([\"echo\", \"1\"], capture_output=True, text=True).stdout.strip()\n") +
		fence("test_ver.py", "from ver import version\n\n\ndef test_version():\n    assert version() == \"1\"\n"),
	fixed: fence("ver.py", "def version():\n    return \"1\"\n"),
	want:  map[string]string{"ver.py": "def version"},
}

// TestPolicyAskApprovedAndRejected: in ask mode a policy finding waits for a
// person; approve runs the code as it is, reject sends the reason to the
// model, which removes the finding. Neither task teaches a lesson: not the
// approved one's plan, not the rejected one's fix.
func TestPolicyAskApprovedAndRejected(t *testing.T) {
	t.Parallel()
	c := newCluster(t, policyScenario.script())

	approved := c.start("--lang", "python", "--policy", "ask", policyScenario.task)
	st := c.waitFor(approved, "the policy gate", waiting(workflows.GatePolicy))
	if !strings.Contains(st.Pending.Details, "subprocess") {
		t.Errorf("policy gate details %q do not name subprocess", st.Pending.Details)
	}
	c.mustCLI("approve", approved)
	st = c.waitFor(approved, "success", phase(workflows.PhaseSucceeded))
	if st.Iteration != 1 {
		t.Errorf("approved run: iterations = %d, want 1 (the flagged code ran and passed)", st.Iteration)
	}

	rejected := c.start("--lang", "python", "--policy", "ask", policyScenario.task)
	c.waitFor(rejected, "the policy gate", waiting(workflows.GatePolicy))
	c.mustCLI("reject", rejected, "--reason", "no subprocesses here")
	st = c.waitFor(rejected, "success", phase(workflows.PhaseSucceeded))
	if st.Iteration != 2 || st.Checkpoints[0].Passed {
		t.Errorf("rejected run: iterations = %d, checkpoints %+v; want a rejected attempt then a passing one", st.Iteration, st.Checkpoints)
	}
	var sawReason bool
	for _, r := range c.model.Requests() {
		if strings.Contains(r.LastUser(), "Rejected by a person: no subprocesses here") {
			sawReason = true
		}
	}
	if !sawReason {
		t.Error("the reject reason never reached the model")
	}
	if ls := c.lessonsOf(policyScenario.task); len(ls) > 0 {
		t.Errorf("tasks with a policy finding saved lessons: %+v", ls)
	}
}

// TestWatchPiped: watch on a pipe prints plain lines and stops at a gate
// with exit code 5, naming the commands that answer it.
func TestWatchPiped(t *testing.T) {
	t.Parallel()
	c := newCluster(t, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: pythonScenario.plan, Delay: 500 * time.Millisecond}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: pythonScenario.fixed}},
	))
	id := c.start("--lang", "python", "--approve-plan", pythonScenario.task)
	_, errOut, code := c.cli("watch", id)
	if code != 5 {
		t.Fatalf("watch exit = %d, want 5 (waiting)\n%s", code, errOut)
	}
	for _, want := range []string{"[waiting] step 1/1 · iteration 0/6", "waiting for approval (plan)", "autocoder approve " + id} {
		if !strings.Contains(errOut, want) {
			t.Errorf("watch output lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "\r") || strings.Contains(errOut, "\033[") {
		t.Errorf("piped watch output has terminal control codes:\n%q", errOut)
	}
	t.Logf("piped sample:\n%s", errOut)
	c.mustCLI("cancel", id, "--reason", "done looking")
	st := c.waitFor(id, "cancellation", phase(workflows.PhaseCancelled))
	if !strings.Contains(st.Error, "done looking") {
		t.Errorf("cancelled status error = %q", st.Error)
	}
}

// TestWatchOnATerminal: on a pseudo-terminal (util-linux script), watch
// draws a progress bar, asks the plan question inline, sends the typed
// answer and follows the task to the end.
func TestWatchOnATerminal(t *testing.T) {
	t.Parallel()
	c := newCluster(t, pythonScenario.script())
	id := c.start("--lang", "python", "--approve-plan", pythonScenario.task)
	c.waitFor(id, "the plan gate", waiting(workflows.GatePlan))

	term := watchOnTerminal(t, c, id)
	term.waitFor(t, "[y/yes] approve", 1)
	term.typeLine(t, "y")
	out := term.wait(t)
	for _, want := range []string{"sent approve", "░", "\r\033[K", "✔ task " + id + " succeeded in 2 iteration(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	t.Logf("terminal sample:\n%s", out)
}

// TestWatchPolicyGateNeedsYes: on a pseudo-terminal, Enter and "y" at the
// policy gate ask again and leave the task waiting; "yes" typed out runs the
// flagged code.
func TestWatchPolicyGateNeedsYes(t *testing.T) {
	t.Parallel()
	c := newCluster(t, policyScenario.script())
	id := c.start("--lang", "python", "--policy", "ask", policyScenario.task)
	c.waitFor(id, "the policy gate", waiting(workflows.GatePolicy))

	term := watchOnTerminal(t, c, id)
	term.waitFor(t, "  answer: ", 1)
	term.typeLine(t, "")
	term.waitFor(t, "  answer: ", 2)
	term.typeLine(t, "y")
	term.waitFor(t, "  answer: ", 3)
	// The prompt sends a signal before it asks again, so none was sent.
	if st := c.status(id); st.Pending == nil || st.Pending.Kind != workflows.GatePolicy {
		t.Fatalf("after Enter and y the task no longer waits at the policy gate: %+v\n%q", st, term.screen.String())
	}
	term.typeLine(t, "yes")
	out := term.wait(t)
	for _, want := range []string{"an empty answer decides nothing", `type "yes" in full`, "sent approve",
		"✔ task " + id + " succeeded in 1 iteration(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
}

// terminal is `autocoder watch` on a pseudo-terminal made by util-linux
// script; what is typed goes through the terminal's line discipline.
type terminal struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	screen syncBuffer
}

func watchOnTerminal(t *testing.T, c *cluster, id string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Fatalf("script (util-linux) is needed for a pseudo-terminal: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	term := &terminal{}
	term.cmd = exec.CommandContext(ctx, "script", "-qfec", c.bin+" watch "+id, "/dev/null")
	term.cmd.Env = append(c.env, "TERM=xterm")
	var err error
	if term.in, err = term.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	term.cmd.Stdout, term.cmd.Stderr = &term.screen, &term.screen
	if err := term.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return term
}

// waitFor waits until text has appeared n times on the screen.
func (term *terminal) waitFor(t *testing.T, text string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for strings.Count(term.screen.String(), text) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the terminal never showed %q %d time(s):\n%q", text, n, term.screen.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (term *terminal) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(term.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// wait waits for watch to end and returns the screen.
func (term *terminal) wait(t *testing.T) string {
	t.Helper()
	if err := term.cmd.Wait(); err != nil {
		t.Fatalf("watch: %v\n%q", err, term.screen.String())
	}
	return term.screen.String()
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
