package starter

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/workflows"
)

// Sequences a hostile test or model can print: set the clipboard, erase the
// line, rewrite it with a CR or backspaces, clear the screen with a C1 CSI,
// reverse the text's direction.
const (
	clipboard = "\x1b]52;c;Y3VybCBldmlsfHNo\x07"
	eraseLine = "\x1b[2K"
)

func hostileStatus() workflows.Status {
	return workflows.Status{
		Task:          "fix the parser " + eraseLine,
		Language:      "python",
		Phase:         workflows.PhaseFailed,
		Step:          1,
		Plan:          []string{"Implement parse " + clipboard, "Test it\r✔ all good"},
		Iteration:     1,
		MaxIterations: 6,
		Checkpoints: []workflows.Checkpoint{{N: 1, Step: 1, Iteration: 1, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Summary: "tests failed: test_\u202eevil"}},
		LastTest: &activities.TestSummary{ExitCode: 1, FailingTests: []string{"test_a" + eraseLine},
			Output: "FAILED test_a\n\tassert 1 == 2\n" + clipboard + "ok\b\b\u009b2J\n"},
		Error: "no passing attempt\n" + eraseLine + "done",
	}
}

// checkTerminalSafe fails if out holds any byte or rune a terminal acts on
// other than newline and tab.
func checkTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			t.Errorf("%s holds U+%04X:\n%q", what, r, out)
			return
		}
	}
}

func TestStatusShowsEscapesVisibly(t *testing.T) {
	var out bytes.Buffer
	printStatus(&out, "autocoder-1", hostileStatus())
	got := out.String()
	checkTerminalSafe(t, "status", got)
	for _, want := range []string{
		`Implement parse \x1b]52;c;Y3VybCBldmlsfHNo\x07`, // the attack is visible, not acted on
		`Test it\r✔ all good`,
		`test_\u202eevil`,
		"FAILED test_a\n    \tassert 1 == 2\n", // multi-line output keeps its lines and tabs
		`ok\b\b\u009b2J`,
		`fix the parser \x1b[2K`,
		"error:     no passing attempt\n\\x1b[2Kdone",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("status lacks %q:\n%s", want, got)
		}
	}
}

// TestStatusJSONKeepsRawText: --json carries the text as it is, escaped by
// JSON, for programs that want it.
func TestStatusJSONKeepsRawText(t *testing.T) {
	var out bytes.Buffer
	if err := writeJSON(&out, hostileStatus()); err != nil {
		t.Fatal(err)
	}
	checkTerminalSafe(t, "status --json", out.String())
	var back workflows.Status
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Plan[0] != hostileStatus().Plan[0] || back.LastTest.Output != hostileStatus().LastTest.Output {
		t.Errorf("JSON changed the text: %q, %q", back.Plan[0], back.LastTest.Output)
	}
}

func TestProgressAndGateShowEscapesVisibly(t *testing.T) {
	st := hostileStatus()
	st.Pending = &workflows.Approval{Kind: workflows.GatePolicy, Question: "Run it anyway? " + eraseLine,
		Details: "main.py:1 process: uses subprocess\n" + clipboard, Deadline: time.Now()}
	for _, tty := range []bool{false, true} {
		var out bytes.Buffer
		v := newView(&out, tty)
		v.show(st)
		v.clear()
		printGate(&out, "autocoder-1", st.Pending)
		got := out.String()
		if tty {
			// The view's own redraw codes are the only ones allowed.
			got = strings.ReplaceAll(got, "\r\033[K", "")
		}
		checkTerminalSafe(t, "progress", got)
		wants := []string{`test_\u202eevil`, `Run it anyway? \x1b[2K`, `\x1b]52;c;`}
		if tty { // only the redrawn line shows the last test's headline
			wants = append(wants, `tests failed: test_a\x1b[2K`)
		}
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("tty=%v: progress lacks %q:\n%s", tty, want, got)
			}
		}
	}
}
