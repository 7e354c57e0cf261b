package activities

import (
	"context"
	"fmt"
	"strings"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/workspace"
)

// judged is what a check runs: the attempt's files with the user's tests
// restored as they were at the task's start, and how the attempt touched
// them.
type judged struct {
	files    []workspace.File
	findings []integrity.Finding
}

// loadJudged reads an attempt's snapshot and applies the test-integrity
// guard: every check that decides success runs the user's tests as they
// were at the start (the task's input snapshot), never the attempt's
// version of them. Without an input snapshot, or when test edits are
// allowed, the attempt runs as it is.
func (a *Activities) loadJudged(ctx context.Context, in CheckInput) (judged, error) {
	files, err := a.loadFiles(ctx, in.SnapshotID)
	if err != nil {
		return judged{}, err
	}
	if in.InputSnapshot == "" || in.AllowTestEdits {
		return judged{files: files}, nil
	}
	input, err := a.loadFiles(ctx, in.InputSnapshot)
	if err != nil {
		return judged{}, fmt.Errorf("load the user's tests: %w", err)
	}
	set := integrity.Protect(input, integrity.Options{TestCmd: in.TestCmd, Protect: in.Protect})
	files, findings := set.Judge(files)
	return judged{files: files, findings: findings}, nil
}

// withFindings makes a check's outcome carry the attempt's integrity
// findings: an attempt with any has not passed, whatever its tests did,
// and its output starts with what to put right.
func withFindings(s TestSummary, findings []integrity.Finding) TestSummary {
	s.TestsPassed = s.Passed && s.Stage == "test"
	if len(findings) == 0 {
		return s
	}
	s.Findings = findings
	s.Passed = false
	if s.ExitCode == 0 {
		s.ExitCode = 1
	}
	s.Output = strings.TrimRight(integrity.Report(findings)+"\n"+s.Output, "\n")
	return s
}
