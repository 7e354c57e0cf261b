package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/workspace"
)

// judged is what a check runs: the attempt's files with the user's tests
// restored as they were at the task's start, and how the attempt touched
// them.
type judged struct {
	files    []workspace.File
	findings []integrity.Finding
	input    []workspace.File // the starting workspace, when it has tests to guard
	set      integrity.Set
}

// loadJudged reads an attempt's snapshot and applies the test-integrity
// guard: every check that decides success runs the user's tests as they
// were at the start (the task's input snapshot), never the attempt's
// version of them. Without an input snapshot, tests in it, or when test
// edits are allowed, the attempt runs as it is.
func (a *Activities) loadJudged(ctx context.Context, in CheckInput) (judged, error) {
	files, err := a.cachedFiles(ctx, in.SnapshotID)
	if err != nil {
		return judged{}, err
	}
	if !guarded(in) {
		return judged{files: files}, nil
	}
	input, err := a.cachedFiles(ctx, in.InputSnapshot)
	if err != nil {
		return judged{}, fmt.Errorf("load the user's tests: %w", err)
	}
	set := integrity.Protect(input, integrity.Options{TestCmd: in.TestCmd, Protect: in.Protect})
	if len(set.Paths()) == 0 {
		return judged{files: files}, nil
	}
	files, findings := set.Judge(files)
	return judged{files: files, findings: findings, input: input, set: set}, nil
}

func guarded(in CheckInput) bool { return in.InputSnapshot != "" && !in.AllowTestEdits }

// judgeCommand is the test command; a guarded check has the runners list
// each test they ran, to compare with the originals' run.
func judgeCommand(in CheckInput) ([]string, error) {
	cmd, err := testCommand(in.Language, in.TestCmd)
	if err != nil || !guarded(in) {
		return cmd, err
	}
	return integrity.ReportCommand(cmd), nil
}

// judge gives a check's outcome the attempt's findings, and one more when
// the tests passed but not all of the user's ran (Set.NotRun): a run cut
// short, or tests left out some other way. A passing run whose report
// cannot be read fails closed: nothing shows the user's tests ran.
func (a *Activities) judge(ctx context.Context, in CheckInput, j judged, s TestSummary) (TestSummary, error) {
	findings := j.findings
	// A step check runs the tests the step named, not all of the user's.
	if j.input != nil && s.Passed && s.Stage == "test" && in.Scope == ScopeAll {
		f, err := a.ranAll(ctx, in, j, s)
		if err != nil {
			return TestSummary{}, err
		}
		if f != nil {
			findings = append(findings, *f)
		}
	}
	s = withFindings(s, findings)
	if len(j.findings) > 0 {
		id, err := a.Store.PutSnapshot(ctx, j.files)
		if err != nil {
			return TestSummary{}, fmt.Errorf("store the attempt with the user's tests restored: %w", err)
		}
		s.Restored = id
	}
	return s, nil
}

// ranAll checks that a passing guarded run ran the user's tests, and
// returns the finding when it did not or when its report is unreadable.
func (a *Activities) ranAll(ctx context.Context, in CheckInput, j judged, s TestSummary) (*integrity.Finding, error) {
	if s.ran == nil {
		return &integrity.Finding{Kind: integrity.KindUnreadable, Detail: "the output went past the size limit"}, nil
	}
	orig, err := a.originalRun(ctx, in, j.input)
	if err != nil {
		return nil, err
	}
	if missing := j.set.NotRun(in.TestCmd, orig, *s.ran); len(missing) > 0 {
		return &integrity.Finding{Kind: integrity.KindFewerRun, Detail: joinLimited(missing, 3) + " did not run"}, nil
	}
	return nil, nil
}

// originalRun is what the user's tests report on the starting workspace,
// run once per task and input (the answer is memoized).
func (a *Activities) originalRun(ctx context.Context, in CheckInput, input []workspace.File) (integrity.Ran, error) {
	key := memoKey("original-run", in.InputSnapshot, in.Language, in.TestCmd)
	var ran integrity.Ran
	if raw, err := a.Store.GetMemo(ctx, key); err == nil && json.Unmarshal(raw, &ran) == nil {
		return ran, nil
	}
	l, err := language(in.Language)
	if err != nil {
		return ran, err
	}
	// The starting workspace's own dependencies; when they fail to
	// install, its tests run without them, as they would have.
	deps, err := a.installDeps(ctx, l, input)
	if err != nil {
		return ran, fmt.Errorf("install the dependencies of the tests as they were: %w", err)
	}
	if deps.failed != nil {
		deps = depsInstall{}
	}
	s, err := a.execute(ctx, in, l, input, deps)
	if err != nil {
		return ran, fmt.Errorf("run the user's tests as they were: %w", err)
	}
	if s.ran != nil {
		ran = *s.ran
	}
	if raw, err := json.Marshal(ran); err == nil {
		if err := a.putMemo(ctx, key, raw); err != nil {
			activity.GetLogger(ctx).Warn("the original tests' run not memoized", "error", err)
		}
	}
	return ran, nil
}

// withFindings makes a check's outcome carry the attempt's integrity
// findings: an attempt with any has not passed, whatever its tests did,
// and its output starts with what to put right.
func withFindings(s TestSummary, findings []integrity.Finding) TestSummary {
	// A run that left out some of the user's tests passed nothing of theirs.
	s.TestsPassed = s.Passed && s.Stage == "test" &&
		!slices.ContainsFunc(findings, func(f integrity.Finding) bool {
			return f.Kind == integrity.KindFewerRun || f.Kind == integrity.KindUnreadable
		})
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
