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
	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/languages"
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
	l, err := language(in.Language)
	if err != nil {
		return TestSummary{}, err
	}
	j, err := a.loadJudged(ctx, in)
	if err != nil {
		return TestSummary{}, err
	}
	test, err := checkCommand(in, l)
	if err != nil {
		return TestSummary{}, err
	}
	p, err := a.policyCheck(ctx, in, j.files)
	if err != nil {
		return TestSummary{}, err
	}
	deps, err := a.installDeps(ctx, l, j.files)
	if err != nil {
		return TestSummary{}, err
	}
	if deps.failed != nil {
		return *deps.failed, nil
	}
	var s TestSummary
	if l.Policy.Checker == lang.CheckerPython {
		s, err = a.checkAndTestPython(ctx, l, p, j.files, test, deps)
	} else if s, err = a.validate(l, p, j.files); err == nil && s.Passed && len(test) > 0 {
		warnings := s.Warnings
		s, err = a.runTests(ctx, in, l, j.files, test, deps)
		s.Warnings = warnings
	}
	if err != nil {
		return s, err
	}
	s.Deps = deps.note
	if s, err = a.judge(ctx, in, j, s); err != nil {
		return s, err
	}
	if in.Scope == ScopeStep {
		s = namedTestsRan(s, in, l)
	}
	a.metrics().Iteration(l.Name, s.Passed)
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
// runs the test command. ScopeStep runs the tests the step named, or with
// none the language's compile check: for Go, `go test -run` with those
// names (or none) over every package, which compiles the code and its
// tests and vets them as the final run will, so a step is never failed for
// what the last one would pass; for Python the checker has already parsed
// every file, and pytest runs the named tests, if any (nil: nothing more
// runs).
func checkCommand(in CheckInput, l lang.Language) ([]string, error) {
	if in.Scope == ScopeAll {
		return judgeCommand(in)
	}
	if in.Scope != ScopeStep {
		return nil, badInput("unknown check scope %q", in.Scope)
	}
	cmd, err := testsCommand(l, in.Tests)
	if err != nil {
		return nil, badInput("%v", err)
	}
	if len(cmd) == 0 {
		return nil, nil
	}
	// go test -v lists the tests that ran, for namedTestsRan.
	return integrity.ReportCommand(cmd), nil
}

// testsCommand runs the named tests, as the language names them, or with
// none its compile check (nil: nothing runs).
func testsCommand(l lang.Language, tests []string) ([]string, error) {
	for _, t := range tests {
		if t == "" || strings.HasPrefix(t, "-") || strings.ContainsAny(t, "\x00\n") {
			return nil, fmt.Errorf("%q is not a test name", t)
		}
	}
	if l.Tests.Named != nil {
		return l.Tests.Named(tests)
	}
	if len(tests) > 0 {
		return nil, fmt.Errorf("%s tests cannot be run by name; finish the step without naming tests, and its compile check judges it", l.Title)
	}
	return slices.Clone(l.Tests.Compile), nil
}

// namedTestsRan fails a passing step check in which a test the step named
// did not run, for a language whose runner passes when nothing matches
// (go test -run): a misspelt or missing test would pass unseen.
func namedTestsRan(s TestSummary, in CheckInput, l lang.Language) TestSummary {
	if !s.Passed || !l.Tests.ConfirmNamed || s.ran == nil {
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
	if p.lines, err = policy.CheckLines(files, rules, languages.LineRules(), p.changes); err != nil {
		return policyRun{}, fmt.Errorf("check lines: %w", err)
	}
	return p, nil
}

// validate checks the safety policy of a snapshot before anything runs:
// the line rules' findings, and for Go its syntax and what it does, read
// with go/ast. (Python is checked in the sandbox: checkAndTestPython.)
func (a *Activities) validate(l lang.Language, p policyRun, files []workspace.File) (TestSummary, error) {
	start := time.Now()
	var findings []policy.Finding
	if l.Policy.Checker == lang.CheckerGo {
		var err error
		if findings, err = policy.CheckGo(files, p.rules, p.changes); err != nil {
			return TestSummary{}, fmt.Errorf("check go: %w", err)
		}
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
func (a *Activities) checkAndTestPython(ctx context.Context, l lang.Language, p policyRun, files []workspace.File, test []string, deps depsInstall) (TestSummary, error) {
	then := test
	if len(p.lines) > 0 && !p.warn {
		then = nil
	}
	res, err := a.runPythonCheck(ctx, policy.PyCheck{Rules: p.rules, Changes: p.changes, Warn: p.warn, Then: then}, files, deps)
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
	s := summarize(res, l, a.limits().MemoryBytes)
	s.Warnings = v.Warnings
	return s, nil
}

// runPythonCheck runs the embedded checker over the files in the sandbox,
// then the command in c.Then if it lets it.
func (a *Activities) runPythonCheck(ctx context.Context, c policy.PyCheck, files []workspace.File, deps depsInstall) (sandbox.Result, error) {
	sandboxFiles, cmd := policy.PythonCheck(c, files)
	stop := heartbeatWhile(ctx)
	res, err := a.Sandbox.Run(ctx, deps.spec(sandbox.Spec{Profile: "python", Files: sandboxFiles, Cmd: cmd, Limits: a.limits()}))
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
	l, err := language(in.Language)
	if err != nil {
		return TestSummary{}, err
	}
	deps, err := a.installDeps(ctx, l, j.files)
	if err != nil {
		return TestSummary{}, err
	}
	if deps.failed != nil {
		return *deps.failed, nil
	}
	s, err := a.execute(ctx, in, l, j.files, deps)
	if err != nil {
		return s, err
	}
	s.Deps = deps.note
	if s, err = a.judge(ctx, in, j, s); err != nil {
		return s, err
	}
	return a.withLessons(ctx, in, s), nil
}

func (a *Activities) execute(ctx context.Context, in CheckInput, l lang.Language, files []workspace.File, deps depsInstall) (TestSummary, error) {
	cmd, err := judgeCommand(in)
	if err != nil {
		return TestSummary{}, err
	}
	return a.runTests(ctx, in, l, files, cmd, deps)
}

func (a *Activities) runTests(ctx context.Context, in CheckInput, l lang.Language, files []workspace.File, cmd []string, deps depsInstall) (TestSummary, error) {
	res, err := a.runSandbox(ctx, in.SnapshotID, deps.spec(sandbox.Spec{Profile: l.Name, Files: files, Cmd: cmd, Limits: a.limits()}))
	if err != nil {
		return TestSummary{}, err
	}
	return summarize(res, l, a.limits().MemoryBytes), nil
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

func testCommand(name, testCmd string) ([]string, error) {
	if testCmd != "" {
		return []string{"sh", "-c", testCmd}, nil
	}
	l, err := language(name)
	if err != nil {
		return nil, err
	}
	return slices.Clone(l.Tests.Command), nil
}

// language is the task's language; an unknown name is bad input.
func language(name string) (lang.Language, error) {
	l, err := languages.Lookup(name)
	if err != nil {
		return l, badInput("%v", err)
	}
	return l, nil
}

// knownOrNamed is the named language, or for a name no longer known (a
// lesson stored by another version) a language of that name that knows
// nothing more: the generic readings apply.
func knownOrNamed(name string) lang.Language {
	if l, err := languages.Lookup(name); err == nil {
		return l
	}
	return lang.Language{Name: name, Title: name}
}

// summarize reads a test run's result; memory is the limit it ran under.
// A long output keeps what the language's failure digest picks (the
// panic, each failing test with its own output, compiler errors) ahead of
// its tail, so the cause is never cut away.
func summarize(res sandbox.Result, l lang.Language, memory int64) TestSummary {
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
		FailingTests: failingTests(l.Failure.Failing, out),
		Output:       keepCause(l, strings.TrimSpace(out)),
		Duration:     res.Duration,
	}
	if !res.StdoutTruncated && !res.StderrTruncated {
		ran := integrity.ParseRan(out)
		s.ran = &ran
	}
	return s
}

// keepCause cuts a run's output to outputTail bytes: its tail, where
// runners print their verdicts, after what the language's digest picks,
// which gets at most half the room.
func keepCause(l lang.Language, out string) string {
	if len(out) <= outputTail || l.Failure.Digest == nil {
		return tail(out, outputTail)
	}
	d := strings.TrimSpace(l.Failure.Digest(out))
	if d == "" {
		return tail(out, outputTail)
	}
	d = truncate.Head(d, outputTail/2)
	return d + "\n…\n" + truncate.Tail(out, outputTail-len(d)-5)
}

func failingTests(patterns []*regexp.Regexp, out string) []string {
	var names []string
	seen := map[string]bool{}
	for _, re := range patterns {
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			if m[1] != "" && !seen[m[1]] && len(names) < 20 {
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
