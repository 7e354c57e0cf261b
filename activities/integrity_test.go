package activities

import (
	"context"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

func TestFindingsFailAnAttempt(t *testing.T) {
	changed := integrity.Finding{Kind: integrity.KindChanged, Path: "test_calc.py"}
	fewer := integrity.Finding{Kind: integrity.KindFewerRun, Detail: "test_calc.py::test_add did not run"}
	passed := TestSummary{Stage: "test", Passed: true, Output: "1 passed"}

	if s := withFindings(passed, nil); !s.Passed || !s.TestsPassed || s.Output != "1 passed" {
		t.Errorf("no findings: %+v", s)
	}
	s := withFindings(passed, []integrity.Finding{changed})
	if s.Passed || !s.TestsPassed || s.ExitCode == 0 {
		t.Errorf("a changed test: %+v, want failed with the originals passing", s)
	}
	if !strings.HasPrefix(s.Output, "Test integrity:") || !strings.Contains(s.Output, "You changed the user's test file test_calc.py; it is put back as it was") || !strings.HasSuffix(s.Output, "1 passed") {
		t.Errorf("output:\n%s", s.Output)
	}
	if h := s.Headline(); h != "integrity: changed the user's test file test_calc.py" {
		t.Errorf("headline %q", h)
	}
	s = withFindings(passed, []integrity.Finding{changed, fewer})
	if s.Passed || s.TestsPassed {
		t.Errorf("a run that left the user's tests out passed them: %+v", s)
	}
	if h := s.Headline(); !strings.HasSuffix(h, "(and 1 more)") {
		t.Errorf("headline %q", h)
	}
}

func TestGuardedChecksListEachTest(t *testing.T) {
	cmd, err := judgeCommand(CheckInput{Language: "python", TestCmd: "pytest -q", InputSnapshot: "in"})
	if err != nil || !strings.Contains(strings.Join(cmd, " "), "PYTEST_ADDOPTS") || cmd[len(cmd)-1] != "pytest -q" {
		t.Errorf("guarded command %q, %v", cmd, err)
	}
	for _, in := range []CheckInput{{Language: "python", TestCmd: "pytest -q"}, {Language: "python", TestCmd: "pytest -q", InputSnapshot: "in", AllowTestEdits: true}} {
		if cmd, _ := judgeCommand(in); strings.Join(cmd, " ") != "sh -c pytest -q" {
			t.Errorf("unguarded command %q", cmd)
		}
	}
}

// A guarded run that passed with a report too large to read proves
// nothing about the user's tests: it fails closed.
func TestUnreadableReportFailsClosed(t *testing.T) {
	input := []workspace.File{{Path: "test_calc.py", Data: []byte("def test_add(): pass\n")}}
	j := judged{files: input, input: input, set: integrity.Protect(input, integrity.Options{})}
	in := CheckInput{Language: "python", TestCmd: "pytest -q", InputSnapshot: "in"}
	flooded := summarize(sandbox.Result{Stdout: strings.Repeat("PASSED test_many.py::test_n\n", 10), StdoutTruncated: true}, languages.MustLookup("python"), 1<<30)
	s, err := (&Activities{}).judge(context.Background(), in, j, flooded)
	if err != nil {
		t.Fatal(err)
	}
	if s.Passed || s.TestsPassed || len(s.Findings) != 1 || s.Findings[0].Kind != integrity.KindUnreadable {
		t.Fatalf("a flooded report passed: %+v", s)
	}
	if !strings.Contains(s.Output, "The test report could not be read") {
		t.Errorf("output:\n%s", s.Output)
	}
}
