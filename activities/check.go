package activities

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/internal/truncate"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

const outputTail = 4000 // bytes of test output kept for the workflow

// Check validates a snapshot and, if it passes, runs its tests: the two
// steps of an attempt in one activity, so an attempt waits for one
// dispatch and one workflow task instead of two (and, for Python, for one
// sandbox: checkAndTestPython). A snapshot that fails validation comes
// back untested, with Stage "validate"; in ask mode the workflow then asks
// a person and calls Execute on approval.
//
// What runs is what the test-integrity guard judges (loadJudged), and the
// outcome carries its findings.
func (a *Activities) Check(ctx context.Context, in CheckInput) (TestSummary, error) {
	j, err := a.loadJudged(ctx, in)
	if err != nil {
		return TestSummary{}, err
	}
	test, err := checkCommand(in)
	if err != nil {
		return TestSummary{}, err
	}
	p, err := a.policyCheck(ctx, in, j.files)
	if err != nil {
		return TestSummary{}, err
	}
	var s TestSummary
	if in.Language == "python" {
		s, err = a.checkAndTestPython(ctx, p, j.files, test)
	} else if s, err = a.validate(p, j.files); err == nil && s.Passed {
		warnings := s.Warnings
		s, err = a.runTests(ctx, in, j.files, test)
		s.Warnings = warnings
	}
	if err != nil {
		return s, err
	}
	if s, err = a.judge(ctx, in, j, s); err != nil {
		return s, err
	}
	if in.Scope == ScopeStep {
		s = namedTestsRan(s, in)
	}
	return a.withLessons(ctx, in, s), nil
}

// withLessons adds to a failed check, when asked, the lessons of failures
// like it: recalled by its output's error signature, as the failure would
// be saved (SaveLessons). Memory is an aid: a store that cannot answer
// gives none.
func (a *Activities) withLessons(ctx context.Context, in CheckInput, s TestSummary) TestSummary {
	if !in.RecallLessons || s.Passed || s.Output == "" {
		return s
	}
	if l := a.recallOrNothing(ctx, RecallInput{Language: in.Language, FailureOutput: s.Output}); len(l.IDs) > 0 {
		s.Lessons = l
	}
	return s
}

// checkCommand is what runs once a check's validation passes. ScopeAll
// runs the test command. ScopeStep runs the language's compile check and
// the tests the step named: for Go, `go test -run` with those names (or
// none) over every package, which compiles the code and its tests and
// vets them as the final run will, so a step is never failed for what the
// last one would pass; for Python the checker has already parsed every
// file, and pytest runs the named tests, if any (nil: nothing more runs).
func checkCommand(in CheckInput) ([]string, error) {
	if in.Scope == ScopeAll {
		return judgeCommand(in)
	}
	if in.Scope != ScopeStep {
		return nil, badInput("unknown check scope %q", in.Scope)
	}
	if in.Language == "python" && len(in.Tests) == 0 {
		return nil, nil
	}
	cmd, err := testsCommand(in.Language, in.Tests)
	if err != nil {
		return nil, badInput("%v", err)
	}
	// go test -v lists the tests that ran, for namedTestsRan.
	return integrity.ReportCommand(cmd), nil
}

// testsCommand runs the named tests, as the language names them: pytest
// paths and node ids; Go test names (their top-level part: subtests run
// with their parent) and package patterns, which start with a dot. With no
// names, Go compiles and vets every package and runs no test.
func testsCommand(lang string, tests []string) ([]string, error) {
	for _, t := range tests {
		if t == "" || strings.HasPrefix(t, "-") || strings.ContainsAny(t, "\x00\n") {
			return nil, fmt.Errorf("%q is not a test name", t)
		}
	}
	switch lang {
	case "python":
		p, err := sandbox.LookupProfile(lang)
		if err != nil {
			return nil, err
		}
		return append(slices.Clone(p.TestCmd), tests...), nil
	case "go":
		var names, pkgs []string
		for _, t := range tests {
			if strings.HasPrefix(t, ".") {
				pkgs = append(pkgs, t)
				continue
			}
			top, _, _ := strings.Cut(t, "/")
			if q := regexp.QuoteMeta(top); !slices.Contains(names, q) {
				names = append(names, q)
			}
		}
		if len(pkgs) == 0 {
			pkgs = []string{"./..."}
		}
		run := "^$"
		if len(names) > 0 {
			run = "^(" + strings.Join(names, "|") + ")$"
		}
		return append([]string{"go", "test", "-count=1", "-run", run}, pkgs...), nil
	default:
		return nil, fmt.Errorf("unsupported language %q (want python or go)", lang)
	}
}

// namedTestsRan fails a passing step check in which a Go test the step
// named did not run: `go test -run` passes when nothing matches, so a
// misspelt or missing test would pass unseen. (pytest fails by itself on a
// path or node id it cannot find.)
func namedTestsRan(s TestSummary, in CheckInput) TestSummary {
	if !s.Passed || in.Language != "go" || s.ran == nil {
		return s
	}
	var missing []string
	for _, t := range in.Tests {
		if strings.HasPrefix(t, ".") {
			continue
		}
		if !slices.Contains(s.ran.Passed, t) {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		return s
	}
	s.Passed, s.TestsPassed, s.ExitCode = false, false, 1
	s.Output = strings.TrimSpace("the tests the step named did not run (no such test?): " + joinLimited(missing, 5) + "\n" + s.Output)
	return s
}

// policyRun is what the safety policy judges in a check: its rules, the
// lines the attempt added or changed, whether findings are only warnings,
// and the findings the host's rules already made.
type policyRun struct {
	rules   policy.Rules
	changes policy.Changes
	warn    bool
	lines   []policy.Finding // of the line rules every language gets
}

// policyCheck sets up a check's policy: in a task on the user's project,
// only what the attempt added or changed is judged, never the user's own
// code; the line rules run here, over text only.
func (a *Activities) policyCheck(ctx context.Context, in CheckInput, files []workspace.File) (policyRun, error) {
	rules, err := checkRules(in)
	if err != nil {
		return policyRun{}, err
	}
	p := policyRun{rules: rules, changes: policy.AllChanged(), warn: in.Warn}
	if in.InputSnapshot != "" {
		input, err := a.cachedFiles(ctx, in.InputSnapshot)
		if err != nil {
			return policyRun{}, fmt.Errorf("load the input snapshot: %w", err)
		}
		p.changes = policy.Diff(input, files)
	}
	if p.lines, err = policy.CheckLines(files, rules, policy.DefaultLineRules(), p.changes); err != nil {
		return policyRun{}, fmt.Errorf("check lines: %w", err)
	}
	return p, nil
}

// validate checks syntax and the safety policy of a Go snapshot before
// anything runs; Python is checked in the sandbox (checkAndTestPython).
func (a *Activities) validate(p policyRun, files []workspace.File) (TestSummary, error) {
	start := time.Now()
	findings, err := policy.CheckGo(files, p.rules, p.changes)
	if err != nil {
		return TestSummary{}, fmt.Errorf("check go: %w", err)
	}
	return p.validation(policy.Merge(findings, p.lines), time.Since(start)), nil
}

// checkRules are the policy rules a check applies.
func checkRules(in CheckInput) (policy.Rules, error) {
	rules, err := policy.DefaultRules().Allow(in.Allow...)
	if err != nil {
		return rules, badInput("%v", err)
	}
	if in.IgnorePolicy {
		rules, _ = rules.Allow(policy.Categories()...)
	}
	return rules, nil
}

// validation is the outcome of a static check. In warn mode, findings
// other than syntax errors pass it, as warnings the summary carries on.
func (p policyRun) validation(findings []policy.Finding, took time.Duration) TestSummary {
	failing, warnings := findings, []policy.Finding(nil)
	if p.warn {
		failing = nil
		for _, f := range findings {
			if f.Rule == policy.RuleSyntax {
				failing = append(failing, f)
			} else {
				warnings = append(warnings, f)
			}
		}
	}
	s := TestSummary{Stage: "validate", Passed: len(failing) == 0, Duration: took}
	if !s.Passed {
		s.ExitCode = 1
		s.Output = policy.Summary(failing)
		s.PolicyOnly = !slices.ContainsFunc(failing, func(f policy.Finding) bool { return f.Rule == policy.RuleSyntax })
		s.Policy = slices.ContainsFunc(failing, func(f policy.Finding) bool { return f.Rule != policy.RuleSyntax })
		return s
	}
	s.Warnings = warnings
	return s
}

// checkAndTestPython checks Python sources and, if they pass, runs the
// tests in the same sandbox: the checker finishes its report before any of
// the code runs, then hands over to the test command (policy.PythonCheck).
// One sandbox instead of two saves a container's start and removal per
// attempt. A line rule's finding outside warn mode stops the tests before
// the sandbox starts; the checker still runs, for its own findings.
func (a *Activities) checkAndTestPython(ctx context.Context, p policyRun, files []workspace.File, test []string) (TestSummary, error) {
	then := test
	if len(p.lines) > 0 && !p.warn {
		then = nil
	}
	res, err := a.runPythonCheck(ctx, policy.PyCheck{Rules: p.rules, Changes: p.changes, Warn: p.warn, Then: then}, files)
	if err != nil {
		return TestSummary{}, err
	}
	findings, rest, err := policy.SplitPythonFindings(res.Stdout)
	if err != nil {
		return TestSummary{}, pythonCheckError(res, err)
	}
	v := p.validation(policy.Merge(findings, p.lines), res.Duration)
	if !v.Passed || len(then) == 0 {
		return v, nil
	}
	res.Stdout = rest
	s := summarize(res, a.limits().MemoryBytes)
	s.Warnings = v.Warnings
	return s, nil
}

// runPythonCheck runs the embedded checker over the files in the sandbox,
// then the command in c.Then if it lets it.
func (a *Activities) runPythonCheck(ctx context.Context, c policy.PyCheck, files []workspace.File) (sandbox.Result, error) {
	sandboxFiles, cmd := policy.PythonCheck(c, files)
	stop := heartbeatWhile(ctx)
	res, err := a.Sandbox.Run(ctx, sandbox.Spec{Profile: "python", Files: sandboxFiles, Cmd: cmd, Limits: a.limits()})
	stop()
	if err != nil {
		return res, fmt.Errorf("run python checker: %w", err)
	}
	return res, nil
}

func pythonCheckError(res sandbox.Result, err error) error {
	return fmt.Errorf("python checker (exit %d, stderr %q): %w", res.ExitCode, clip(res.Stderr, 500), err)
}

// Execute runs the test command over the snapshot in the sandbox. A failing
// test is a result, not an error.
func (a *Activities) Execute(ctx context.Context, in CheckInput) (TestSummary, error) {
	j, err := a.loadJudged(ctx, in)
	if err != nil {
		return TestSummary{}, err
	}
	s, err := a.execute(ctx, in, j.files)
	if err != nil {
		return s, err
	}
	if s, err = a.judge(ctx, in, j, s); err != nil {
		return s, err
	}
	return a.withLessons(ctx, in, s), nil
}

func (a *Activities) execute(ctx context.Context, in CheckInput, files []workspace.File) (TestSummary, error) {
	cmd, err := judgeCommand(in)
	if err != nil {
		return TestSummary{}, err
	}
	return a.runTests(ctx, in, files, cmd)
}

func (a *Activities) runTests(ctx context.Context, in CheckInput, files []workspace.File, cmd []string) (TestSummary, error) {
	res, err := a.runSandbox(ctx, in.SnapshotID, sandbox.Spec{Profile: in.Language, Files: files, Cmd: cmd, Limits: a.limits()})
	if err != nil {
		return TestSummary{}, err
	}
	return summarize(res, a.limits().MemoryBytes), nil
}

// runSandbox runs a spec over a snapshot's files, heartbeating meanwhile.
func (a *Activities) runSandbox(ctx context.Context, snapshot string, spec sandbox.Spec) (sandbox.Result, error) {
	stop := heartbeatWhile(ctx)
	res, err := a.Sandbox.Run(ctx, spec)
	stop()
	if err != nil {
		if errors.Is(err, workspace.ErrUnsafePath) {
			return res, badInput("snapshot %s: %v", snapshot, err)
		}
		return res, fmt.Errorf("run in the sandbox: %w", err)
	}
	return res, nil
}

func testCommand(lang, testCmd string) ([]string, error) {
	if testCmd != "" {
		return []string{"sh", "-c", testCmd}, nil
	}
	p, err := sandbox.LookupProfile(lang)
	if err != nil {
		return nil, badInput("%v", err)
	}
	return p.TestCmd, nil
}

// summarize reads a test run's result; memory is the limit it ran under.
func summarize(res sandbox.Result, memory int64) TestSummary {
	out := res.Stdout
	if res.Stderr != "" {
		out += "\n" + res.Stderr
	}
	if res.StdoutTruncated || res.StderrTruncated {
		out += "\n[output truncated]"
	}
	if res.TimedOut {
		out += fmt.Sprintf("\n[killed: wall-clock timeout after %s]", res.Duration.Round(time.Millisecond))
	}
	if res.OOMKilled {
		out += "\n[" + oomKilled(memory) + "]"
	}
	s := TestSummary{
		Stage:        "test",
		Passed:       res.ExitCode == 0 && !res.TimedOut && !res.OOMKilled,
		ExitCode:     res.ExitCode,
		TimedOut:     res.TimedOut,
		OOMKilled:    res.OOMKilled,
		FailingTests: failingTests(out),
		Output:       tail(strings.TrimSpace(out), outputTail),
		Duration:     res.Duration,
	}
	if !res.StdoutTruncated && !res.StderrTruncated {
		ran := integrity.ParseRan(out)
		s.ran = &ran
	}
	return s
}

var failingTestPatterns = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^FAILED (\S+)`),           // pytest summary
	regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`),     // go test
	regexp.MustCompile(`(?m)^ERROR (\S+\.py)\b`),      // pytest collection error
	regexp.MustCompile(`(?m)^FAIL\s+(\S+)\s+\[build`), // go build failure
}

func failingTests(out string) []string {
	var names []string
	seen := map[string]bool{}
	for _, re := range failingTestPatterns {
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			if !seen[m[1]] && len(names) < 20 {
				seen[m[1]] = true
				names = append(names, m[1])
			}
		}
	}
	return names
}

// tail keeps the last n bytes, where test runners print their verdicts.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…\n" + truncate.Tail(s, n)
}

func isLimitError(err error) bool {
	return errors.Is(err, workspace.ErrTooLarge) || errors.Is(err, workspace.ErrUnsafePath)
}

func badInput(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeBadInput, nil)
}
