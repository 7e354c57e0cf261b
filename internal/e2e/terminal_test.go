package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// hostileScenario's model plans with a terminal escape in a step, and its
// test prints sequences that would set the clipboard, erase the line and
// rewrite it, then fails.
var hostileScenario = scenario{
	lang: "python",
	task: "Write hello() in hello.py returning hi, with a pytest test.",
	plan: "1. Implement hello \x1b]52;c;ZWNobyBwd25lZA==\x07in hello.py.",
	buggy: fence("hello.py", "def hello():\n    return 'hi'\n") +
		fence("test_hello.py", "from hello import hello\n\n\ndef test_hello():\n"+
			"    print('\\x1b]52;c;ZWNobyBwd25lZA==\\x07\\x1b[2Kall tests passed\\r\\u202eok\\x9b2J')\n"+
			"    assert hello() == 'bye'\n"),
}

// rawControl reports the first character in s a terminal would act on,
// other than newline and tab.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return r, true
		}
	}
	return 0, false
}

// TestHostileOutputCannotDriveTheTerminal: what a model and a test print
// reaches run's progress and final error, and status, with every escape
// made visible; status --json keeps it as it was.
func TestHostileOutputCannotDriveTheTerminal(t *testing.T) {
	t.Parallel()
	c := newCluster(t, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: hostileScenario.plan}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: hostileScenario.buggy}},
	))
	stdout, stderr, code := c.cli("run", "--lang", "python", "--max-iterations", "1", "--out", t.TempDir(), hostileScenario.task)
	if code != 1 {
		t.Fatalf("run exit %d, want 1 (the test fails)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	id := startedRE.FindStringSubmatch(stderr)
	if id == nil {
		t.Fatalf("run printed no task id:\n%s", stderr)
	}
	human, errOut, code := c.cli("status", id[1])
	if code != 0 {
		t.Fatalf("status exit %d:\n%s", code, errOut)
	}
	for name, out := range map[string]string{"run stdout": stdout, "run stderr": stderr, "status": human} {
		if r, ok := rawControl(out); ok {
			t.Errorf("%s holds U+%04X raw:\n%q", name, r, out)
		}
	}
	if !strings.Contains(stderr, `\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2Kall tests passed\r\u202eok\u009b2J`) {
		t.Errorf("run's error does not show the test's output with visible escapes:\n%s", stderr)
	}
	for _, want := range []string{`Implement hello \x1b]52;c;ZWNobyBwd25lZA==\x07in hello.py`, `all tests passed\r\u202eok`} {
		if !strings.Contains(human, want) {
			t.Errorf("status lacks %q:\n%s", want, human)
		}
	}

	var st workflows.Status
	if err := json.Unmarshal([]byte(c.mustCLI("status", id[1], "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st.Plan[0], "\x1b]52;c;") || !strings.Contains(st.LastTest.Output, "\x1b[2Kall tests passed\r\u202eok\u009b2J") {
		t.Errorf("status --json changed the text: plan %q, output %q", st.Plan[0], st.LastTest.Output)
	}
}

// TestRollbackOutOfRange: a checkpoint the task does not have is a bad
// request (exit 2) that names the checkpoints it has.
func TestRollbackOutOfRange(t *testing.T) {
	t.Parallel()
	c := newCluster(t, pythonScenario.script())
	id := c.start("--lang", "python", "--approve-plan", pythonScenario.task)
	c.waitFor(id, "the plan gate", waiting(workflows.GatePlan))
	for _, to := range []string{"999", "1"} {
		_, errOut, code := c.cli("rollback", id, "--to", to)
		if code != 2 || !strings.Contains(errOut, "unknown checkpoint "+to) {
			t.Errorf("rollback --to %s: exit %d, want 2 and a message naming the checkpoint:\n%s", to, code, errOut)
		}
	}
	c.mustCLI("cancel", id, "--force")
}
