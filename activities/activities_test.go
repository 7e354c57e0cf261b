package activities

import (
	"context"
	"errors"
	"fmt"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// env runs activities with a real SQLite store and the real openai client
// talking to a scripted model; the sandbox is added by tests that need it.
type env struct {
	acts  *Activities
	model *llmtest.Server
	tenv  *testsuite.TestActivityEnvironment
}

func newEnv(t *testing.T, script llmtest.Script) *env {
	t.Helper()
	model := llmtest.New(t, script)
	e := newEnvAt(t, model.URL())
	e.model = model
	return e
}

// newEnvAt is newEnv with a model served elsewhere, at url.
func newEnvAt(t testing.TB, url string) *env {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), t.TempDir()+"/a.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	llmEnv := llm.Env{OpenAIKey: "k", OpenAIBaseURL: url}
	acts := &Activities{Store: st, Models: func(name string) (llm.Model, llm.Spec, error) {
		spec, err := llm.ParseSpec(name)
		if err != nil {
			return nil, spec, err
		}
		m, err := llm.New(spec, llmEnv)
		return m, spec, err
	}}
	var s testsuite.WorkflowTestSuite
	tenv := s.NewTestActivityEnvironment()
	tenv.RegisterActivity(acts)
	return &env{acts: acts, tenv: tenv}
}

func (e *env) snapshot(t testing.TB, files map[string]string) string {
	t.Helper()
	var fs []workspace.File
	for p, d := range files {
		fs = append(fs, workspace.File{Path: p, Data: []byte(d)})
	}
	id, err := e.acts.Store.PutSnapshot(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// run executes an activity in the test environment and decodes its
// result; an error fails the test.
func run[T any](t *testing.T, e *env, activity, in any) T {
	t.Helper()
	val, err := e.tenv.ExecuteActivity(activity, in)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := val.Get(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// saveLessons runs SaveLessons and returns the ids of the lessons saved;
// saving none fails the test.
func (e *env) saveLessons(t *testing.T, in SaveLessonsInput) []string {
	t.Helper()
	saved := run[[]string](t, e, e.acts.SaveLessons, in)
	if len(saved) == 0 {
		t.Fatal("no lessons saved")
	}
	return saved
}

func genInput(base string) GenerateInput {
	return GenerateInput{Task: "t", Language: "python", Plan: []string{"do it"}, Step: 1, Iteration: 1, BaseSnapshot: base, Model: "openai:gpt-4.1-mini"}
}

func TestGenerateAppliesFilesAndEdits(t *testing.T) {
	e := newEnv(t, llmtest.Text("```path=app.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n```path=new.py\nprint('hi')\n```\n"))
	base := e.snapshot(t, map[string]string{"app.py": "x = 1\ny = 3\n"})
	out := run[GenerateOutput](t, e, e.acts.Generate, genInput(base))
	if out.Rejected != "" || strings.Join(out.Changed, ",") != "app.py,new.py" || out.Usage.PromptTokens == 0 {
		t.Fatalf("output = %+v", out)
	}
	files, err := e.acts.Store.GetSnapshot(context.Background(), out.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || string(files[0].Data) != "x = 2\ny = 3\n" {
		t.Fatalf("files = %+v", files)
	}
}

func TestGenerateRejectsUnusableOutputAsAResult(t *testing.T) {
	for name, reply := range map[string]string{
		"no code":        "I would rather not.",
		"path traversal": "```path=../../etc/passwd\nroot::0:0\n```\n",
		"absolute path":  "```path=/etc/cron.d/x\n* * * * * root sh\n```\n",
		"edit misses":    "```path=app.py\n<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, llmtest.Text(reply))
			base := e.snapshot(t, map[string]string{"app.py": "x = 1\n"})
			v, err := e.tenv.ExecuteActivity(e.acts.Generate, genInput(base))
			if err != nil {
				t.Fatalf("bad model output must be a result, got error %v", err)
			}
			var out GenerateOutput
			if err := v.Get(&out); err != nil {
				t.Fatal(err)
			}
			if out.Rejected == "" || out.SnapshotID != base {
				t.Fatalf("output = %+v, want a rejection keeping the base", out)
			}
		})
	}
}

func TestModelAnswersAreMemoizedPerTask(t *testing.T) {
	e := newEnv(t, llmtest.Text("```path=a.py\nx = 1\n```\n"))
	for range 2 {
		if _, err := e.tenv.ExecuteActivity(e.acts.Generate, genInput("")); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.model.Calls(); got != 1 {
		t.Errorf("model calls = %d, want 1: a retried activity must reuse the memoized answer", got)
	}
	in := genInput("")
	in.Iteration = 2
	if _, err := e.tenv.ExecuteActivity(e.acts.Generate, in); err != nil {
		t.Fatal(err)
	}
	if got := e.model.Calls(); got != 2 {
		t.Errorf("model calls = %d, want 2: a new iteration asks again", got)
	}
}

func TestModelErrorsMapToRetryPolicy(t *testing.T) {
	tests := []struct {
		reply         llmtest.Reply
		wantType      string
		nonRetryable  bool
		wantNextDelay time.Duration
	}{
		{llmtest.Reply{Status: 401}, ErrTypeModelAuth, true, 0},
		{llmtest.Reply{Status: 400}, ErrTypeModelRequest, true, 0},
		{llmtest.Reply{Status: 429, RetryAfter: "7"}, "ModelRateLimited", false, 7 * time.Second},
	}
	for _, tc := range tests {
		e := newEnv(t, llmtest.Fixed(tc.reply))
		_, err := e.tenv.ExecuteActivity(e.acts.Plan, PlanInput{Task: "t", Language: "python", Model: "openai:gpt-4.1-mini"})
		var app *temporal.ApplicationError
		if !errors.As(err, &app) {
			t.Fatalf("status %d: error %v is not an application error", tc.reply.Status, err)
		}
		if app.Type() != tc.wantType || app.NonRetryable() != tc.nonRetryable || app.NextRetryDelay() != tc.wantNextDelay {
			t.Errorf("status %d: type %s nonRetryable %v next %s; want %s %v %s", tc.reply.Status, app.Type(), app.NonRetryable(), app.NextRetryDelay(), tc.wantType, tc.nonRetryable, tc.wantNextDelay)
		}
	}
}

func TestPlanFallsBackToOneStep(t *testing.T) {
	e := newEnv(t, llmtest.Text("I will just do it."))
	out := run[PlanOutput](t, e, e.acts.Plan, PlanInput{Task: "t", Language: "go", Model: "openai:gpt-4.1-mini"})
	if len(out.Steps) != 1 {
		t.Errorf("steps = %q", out.Steps)
	}
}

// realSandbox returns the host's sandbox; outside CI a host without one
// skips the test.
func realSandbox(t *testing.T) sandbox.Runner {
	t.Helper()
	sb, err := sandbox.New(context.Background(), sandbox.Config{PoolSize: -1, Profiles: sandbox.ProfilesOf(languages.All())})
	if err != nil {
		testenv.RequireService(t, "a sandbox", err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

// TestCheckValidatesWithTheRealSandbox: syntax errors and policy findings,
// in both languages, stop a check before the tests; code that passes
// validation (here, or by the allow-list) goes on to be tested.
func TestCheckValidatesWithTheRealSandbox(t *testing.T) {
	sb := realSandbox(t)
	tests := []struct {
		lang, path, src string
		allow           []string
		valid, policy   bool
		want            string
	}{
		{"python", "ok.py", "def f():\n    return 1\n", nil, true, false, ""},
		{"python", "bad.py", "def f(:\n", nil, false, false, "syntax"},
		{"python", "sh.py", "import subprocess\nsubprocess.run(['ls'])\n", nil, false, true, "process"},
		{"python", "sh.py", "import subprocess\nsubprocess.run(['ls'])\n", []string{"process"}, true, false, ""},
		{"go", "main.go", "package main\n\nimport \"os/exec\"\n\nfunc main() { exec.Command(\"ls\").Run() }\n", nil, false, true, "process"},
		{"go", "main.go", "package main\n\nfunc main() {\n", nil, false, false, "syntax"},
	}
	for _, tc := range tests {
		e := newEnv(t, llmtest.Text(""))
		e.acts.Sandbox = sb
		id := e.snapshot(t, map[string]string{tc.path: tc.src})
		s := run[TestSummary](t, e, e.acts.Check, CheckInput{SnapshotID: id, Language: tc.lang, Allow: tc.allow})
		validated := s.Stage == "test"
		if validated != tc.valid || s.PolicyOnly != tc.policy || !strings.Contains(s.Output, tc.want) {
			t.Errorf("%s %s allow=%v: %+v", tc.lang, tc.path, tc.allow, s)
		}
	}
}

// TestCheckValidatesThenTests runs Check on the real sandbox: code that
// fails validation comes back untested, valid code comes back with its
// test result.
func TestCheckValidatesThenTests(t *testing.T) {
	sb := realSandbox(t)
	const test = "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
	tests := []struct {
		name, calc     string
		stage          string
		passed, policy bool
		want           string
	}{
		{"passes", "def add(a, b):\n    return a + b\n", "test", true, false, ""},
		{"fails its test", "def add(a, b):\n    return a - b\n", "test", false, false, "test_calc.py::test_add"},
		{"syntax error", "def add(a, b:\n", "validate", false, false, "syntax"},
		{"flagged", "import os\n\ndef add(a, b):\n    os.system('true')\n    return a + b\n", "validate", false, true, "process"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, llmtest.Text(""))
			e.acts.Sandbox = sb
			id := e.snapshot(t, map[string]string{"calc.py": tc.calc, "test_calc.py": test})
			s := run[TestSummary](t, e, e.acts.Check, CheckInput{SnapshotID: id, Language: "python"})
			if s.Stage != tc.stage || s.Passed != tc.passed || s.PolicyOnly != tc.policy || !strings.Contains(s.Output+strings.Join(s.FailingTests, " "), tc.want) {
				t.Errorf("%+v", s)
			}
			if strings.Contains(s.Output, `"done"`) {
				t.Errorf("the checker's report is in the output: %q", s.Output)
			}
		})
	}
	// Python is checked and tested in one sandbox; the tests see only the
	// snapshot's files, not the checker, and their own output.
	t.Run("tests see only the snapshot", func(t *testing.T) {
		e := newEnv(t, llmtest.Text(""))
		e.acts.Sandbox = sb
		id := e.snapshot(t, map[string]string{"test_files.py": "import os\n\ndef test_files():\n" +
			"    print('files:', sorted(os.listdir('.')))\n    assert sorted(os.listdir('.')) == ['test_files.py']\n"})
		s := run[TestSummary](t, e, e.acts.Check, CheckInput{SnapshotID: id, Language: "python", TestCmd: "python3 -m pytest -q -s -p no:cacheprovider"})
		if s.Stage != "test" || !s.Passed || !strings.Contains(s.Output, "files: ['test_files.py']") {
			t.Errorf("%+v", s)
		}
	})
}

func TestSummarizeFindsFailingTests(t *testing.T) {
	py := sandbox.Result{ExitCode: 1, Stdout: "F.\n=== short test summary info ===\nFAILED test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed"}
	goRes := sandbox.Result{ExitCode: 1, Stdout: "--- FAIL: TestAdd (0.00s)\n    calc_test.go:6: Add(2, 3) = 6, want 5\nFAIL\nFAIL\texample.com/calc\t0.002s"}
	timeout := sandbox.Result{ExitCode: 137, TimedOut: true, Duration: 2 * time.Second}
	if s := summarize(py, languages.MustLookup("python"), 1<<30); s.Passed || strings.Join(s.FailingTests, ",") != "test_calc.py::test_add" {
		t.Errorf("pytest: %+v", s)
	}
	if s := summarize(goRes, languages.MustLookup("go"), 1<<30); strings.Join(s.FailingTests, ",") != "TestAdd" {
		t.Errorf("go test: %+v", s)
	}
	if s := summarize(timeout, languages.MustLookup("python"), 1<<30); s.Passed || !strings.Contains(s.Output, "wall-clock timeout") || s.Headline() != "tests timed out" {
		t.Errorf("timeout: %+v", s)
	}
	if s := summarize(sandbox.Result{ExitCode: 137, OOMKilled: true}, languages.MustLookup("python"), 1<<30); s.Passed || !strings.HasSuffix(s.Output, "[killed: memory limit 1 GiB]") || s.Headline() != "tests ran out of memory" {
		t.Errorf("oom: %+v", s)
	}
	if s := summarize(sandbox.Result{Stdout: strings.Repeat("x", 10*outputTail)}, languages.MustLookup("go"), 1<<30); len(s.Output) > outputTail+10 {
		t.Errorf("output kept %d bytes, want about %d", len(s.Output), outputTail)
	}
}

func TestLineDiff(t *testing.T) {
	got := lineDiff("a\nb\nc\n", "a\nB\nc\nd\n")
	if want := "-b\n+B\n+d\n"; got != want {
		t.Errorf("lineDiff = %q, want %q", got, want)
	}
	if got := fileSetDiff(
		[]workspace.File{{Path: "x.py", Data: []byte("1\n")}, {Path: "gone.py", Data: []byte("")}},
		[]workspace.File{{Path: "x.py", Data: []byte("2\n")}, {Path: "new.py", Data: []byte("n\n")}},
	); got != "--- x.py\n+++ x.py\n-1\n+2\n--- new.py\n+++ new.py\n+n\ndeleted gone.py\n" {
		t.Errorf("fileSetDiff = %q", got)
	}
}

// TestRetryGenerateReflectsFirst: given the failure, Generate asks for a
// diagnosis, recalls the lessons of failures like it (here, a fix saved by
// an earlier task) and generates with both; retried, it pays for neither
// call again.
func TestRetryGenerateReflectsFirst(t *testing.T) {
	const diagnosis = "Root cause: add subtracts."
	e := newEnv(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if strings.Contains(req.LastUser(), "Reflect before the next attempt") {
			return llmtest.Reply{Content: diagnosis}
		}
		return llmtest.Reply{Content: "```path=calc.py\ndef add(a, b):\n    return a + b\n```\n"}
	})
	failure := "FAILED test_calc.py::test_add - assert -1 == 3\n" +
		"E       assert -1 == 3\nE        +  where -1 = add(1, 2)\n1 failed in 0.01s"
	failed := e.snapshot(t, map[string]string{"calc.py": "def add(a, b):\n    return a - b\n"})
	passed := e.snapshot(t, map[string]string{"calc.py": "def add(a, b):\n    return a + b\n"})
	saved := e.saveLessons(t, SaveLessonsInput{Task: "add numbers", Language: "python", Plan: []string{"add"},
		Fixes: []Fix{{FailedSnapshot: failed, PassedSnapshot: passed, FailureOutput: failure, Reflection: "wrong operator"}}, Succeeded: true})
	in := GenerateInput{Task: "sum two numbers", Language: "python", Plan: []string{"sum"}, Step: 1, Iteration: 2,
		BaseSnapshot: failed, Lessons: "task lesson\n", Model: "openai:gpt-4.1-mini",
		Failure: &TestSummary{Stage: "test", ExitCode: 1, Output: failure}, RecallLessons: true}
	for try := 1; try <= 2; try++ {
		out := run[GenerateOutput](t, e, e.acts.Generate, in)
		if out.Reflection != diagnosis || out.Usage.Calls != 2 || out.SnapshotID != passed {
			t.Errorf("try %d: reflection %q, calls %d, snapshot %s; want the diagnosis, 2 calls and the fixed files %s",
				try, out.Reflection, out.Usage.Calls, out.SnapshotID, passed)
		}
		if out.Lessons == nil || !slices.Contains(out.Lessons.IDs, saved[0]) {
			t.Errorf("try %d: lessons %+v; want lesson %s", try, out.Lessons, saved[0])
		}
	}
	reqs := e.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2: the retried activity reuses both answers", len(reqs))
	}
	gen := reqs[1].LastUser()
	for _, want := range []string{diagnosis, "task lesson", "a + b"} {
		if !strings.Contains(gen, want) {
			t.Errorf("generate prompt lacks %q:\n%s", want, gen)
		}
	}

}

// TestPlanRecallsLessonsOfTheTask: asked to, Plan recalls a similar
// task's lesson from the real store, puts it in the prompt and returns it.
func TestPlanRecallsLessonsOfTheTask(t *testing.T) {
	e := newEnv(t, llmtest.Text("1. Write add with a test."))
	saved := e.saveLessons(t, SaveLessonsInput{Task: "add two numbers in calc.py", Language: "python",
		Plan: []string{"write add in calc.py with a pytest"}, FirstTry: true, Succeeded: true})
	in := PlanInput{Task: "add numbers in calc.py", Language: "python", Model: "openai:gpt-4.1-mini"}
	for _, ask := range []bool{false, true} {
		in.RecallLessons = ask
		out := run[PlanOutput](t, e, e.acts.Plan, in)
		reqs := e.model.Requests()
		prompt := reqs[len(reqs)-1].LastUser()
		if !reqs[len(reqs)-1].Stream {
			t.Error("the model call did not stream")
		}
		switch {
		case !ask && (out.Lessons != nil || strings.Contains(prompt, "with a pytest")):
			t.Errorf("lessons recalled unasked: %+v", out.Lessons)
		case ask && (out.Lessons == nil || !slices.Contains(out.Lessons.IDs, saved[0]) || !strings.Contains(prompt, "with a pytest")):
			t.Errorf("asked for lessons, got %+v and prompt\n%s\nwant lesson %s in both", out.Lessons, prompt, saved[0])
		}
	}
}

// TestFailedCheckRecallsLessons: asked to, a failed check recalls from the
// real store the lessons of failures like it (here, a fix an earlier task
// saved for the same error); unasked, it recalls none. A Go syntax error
// fails validation before anything runs, so no sandbox is needed.
func TestFailedCheckRecallsLessons(t *testing.T) {
	e := newEnvAt(t, "")
	broken := e.snapshot(t, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int {\n"})
	fixed := e.snapshot(t, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n"})
	in := CheckInput{SnapshotID: broken, Language: "go"}
	failed := run[TestSummary](t, e, e.acts.Check, in)
	if failed.Passed || failed.Output == "" || failed.Lessons != nil {
		t.Fatalf("unasked: %+v; want a failure without lessons", failed)
	}
	saved := e.saveLessons(t, SaveLessonsInput{Task: "add numbers", Language: "go", Plan: []string{"add"},
		Fixes: []Fix{{FailedSnapshot: broken, PassedSnapshot: fixed, FailureOutput: failed.Output}}, Succeeded: true})

	in.RecallLessons = true
	s := run[TestSummary](t, e, e.acts.Check, in)
	if s.Passed || s.Lessons == nil || !slices.Contains(s.Lessons.IDs, saved[0]) || !strings.Contains(s.Lessons.Text, "return a + b") {
		t.Errorf("asked: lessons %+v; want lesson %s with its fix", s.Lessons, saved[0])
	}
}

// TestCheckJudgesOnlyTheAttemptAndWarns: on the real sandbox, the user's
// own code that spawns processes and imports dynamically gives no finding
// when the attempt changed another line; in warn mode the attempt's own
// findings are warnings and the tests run; a line rule's finding (a
// credential read) stops a denying check before the tests.
func TestCheckJudgesOnlyTheAttemptAndWarns(t *testing.T) {
	sb := realSandbox(t)
	const pyTest = "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
	const pyUser = "import subprocess\n\nmod = __import__('json')\n\ndef add(a, b):\n    return a - b\n"
	const goMod = "module example.com/calc\n\ngo 1.21\n"
	const goTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n"
	const goUser = "package calc\n\nimport \"os/exec\"\n\nvar Sh = exec.Command\n\nfunc Add(a, b int) int { return a - b }\n"
	tests := []struct {
		name, lang     string
		input, attempt map[string]string
		warn           bool
		stage          string
		passed         bool
		warnings       []string // "file:line:rule"
	}{
		{"python: the user's code is not judged", "python",
			map[string]string{"calc.py": pyUser, "test_calc.py": pyTest},
			map[string]string{"calc.py": strings.Replace(pyUser, "a - b", "a + b", 1), "test_calc.py": pyTest},
			false, "test", true, nil},
		{"python: the attempt's spawn warns", "python", nil,
			map[string]string{"calc.py": "import os\n\ndef add(a, b):\n    os.system('true')\n    return a + b\n", "test_calc.py": pyTest},
			true, "test", true, []string{"calc.py:4:process"}},
		{"python: a credential read stops a denying check", "python", nil,
			map[string]string{"calc.py": "import os\nKEY = os.environ.get('OPENAI_API_KEY')\n\ndef add(a, b):\n    return a + b\n", "test_calc.py": pyTest},
			false, "validate", false, nil},
		{"go: the user's code is not judged", "go",
			map[string]string{"go.mod": goMod, "calc.go": goUser, "calc_test.go": goTest},
			map[string]string{"go.mod": goMod, "calc.go": strings.Replace(goUser, "a - b", "a + b", 1), "calc_test.go": goTest},
			false, "test", true, nil},
		{"go: the attempt's spawn warns", "go", nil,
			map[string]string{"go.mod": goMod, "calc.go": strings.Replace(goUser, "a - b", "a + b", 1), "calc_test.go": goTest},
			true, "test", true, []string{"calc.go:3:process"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, llmtest.Text(""))
			e.acts.Sandbox = sb
			in := CheckInput{SnapshotID: e.snapshot(t, tc.attempt), Language: tc.lang, Warn: tc.warn}
			if tc.input != nil {
				in.InputSnapshot = e.snapshot(t, tc.input)
			}
			s := run[TestSummary](t, e, e.acts.Check, in)
			var warnings []string
			for _, f := range s.Warnings {
				warnings = append(warnings, fmt.Sprintf("%s:%d:%s", f.File, f.Line, f.Rule))
			}
			if s.Stage != tc.stage || s.Passed != tc.passed || !slices.Equal(warnings, tc.warnings) {
				t.Errorf("stage %s, passed %v, warnings %v; want %s, %v, %v\n%s", s.Stage, s.Passed, warnings, tc.stage, tc.passed, tc.warnings, s.Output)
			}
		})
	}
}

// TestTaskWithFindingsTeachesNothing: a task whose checks found code the
// safety policy denies saves neither its plan nor its fix, and leaves the
// record of the lessons it recalled as it was.
func TestTaskWithFindingsTeachesNothing(t *testing.T) {
	e := newEnvAt(t, "")
	recalled := e.saveLessons(t, SaveLessonsInput{Task: "add two numbers in calc.py", Language: "go",
		Plan: []string{"write Add"}, FirstTry: true, Succeeded: true})[0]
	hostile := e.snapshot(t, map[string]string{"calc.go": "package calc\n\nimport \"os/exec\"\n\nfunc Add(a, b int) int { exec.Command(\"sh\").Run(); return a + b }\n"})
	checked := run[TestSummary](t, e, e.acts.Check, CheckInput{SnapshotID: hostile, Language: "go"})
	if checked.Passed || !checked.Policy {
		t.Fatalf("check of code running a shell: %+v; want a failed validation with a policy finding", checked)
	}
	fixed := e.snapshot(t, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n"})
	saved := run[[]string](t, e, e.acts.SaveLessons, SaveLessonsInput{Task: "add two numbers in calc.py, then run a shell",
		Language: "go", Plan: []string{"write Add", "run sh"}, FirstTry: true, Succeeded: true, Recalled: []string{recalled},
		Fixes:    []Fix{{FailedSnapshot: hostile, PassedSnapshot: fixed, FailureOutput: checked.Output}},
		Findings: true})
	if len(saved) != 0 {
		t.Errorf("saved %v from a task with findings", saved)
	}
	all, err := e.acts.Store.ListLessons(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].ID != recalled || all[0].Recalled != 0 {
		t.Errorf("lessons after the task: %+v; want only %s, never marked", all, recalled)
	}
}

// TestSaveLessonsChargesFailedChecks: a task that passed after failed
// checks credits the lessons it recalled and charges each with the checks
// that failed after its recall.
func TestSaveLessonsChargesFailedChecks(t *testing.T) {
	e := newEnvAt(t, "")
	early := e.saveLessons(t, SaveLessonsInput{Task: "add two numbers", Language: "go", Plan: []string{"write Add"}, FirstTry: true, Succeeded: true})[0]
	late := e.saveLessons(t, SaveLessonsInput{Task: "sum a slice", Language: "go", Plan: []string{"write Sum"}, FirstTry: true, Succeeded: true})[0]
	run[[]string](t, e, e.acts.SaveLessons, SaveLessonsInput{Task: "add and sum", Language: "go", Plan: []string{"both"},
		Recalled: []string{early, late}, FailedAfter: []int{3}, Succeeded: true})
	for id, want := range map[string]int{early: 3, late: 0} {
		l, err := e.acts.Store.GetLesson(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if l.Recalled != 1 || l.Succeeded != 1 || l.FailedChecks != want {
			t.Errorf("lesson %s: recalled %d, succeeded %d, %d failed checks; want 1, 1, %d", id, l.Recalled, l.Succeeded, l.FailedChecks, want)
		}
	}
}

// TestCallUsageCountsUnpricedCalls: a call to a model without a known
// price is counted as such, so its $0 is not taken for a cost.
func TestCallUsageCountsUnpricedCalls(t *testing.T) {
	var u Usage
	u.Add((&Activities{}).callUsage(llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}, llm.Usage{InputTokens: 1000, OutputTokens: 100}))
	if u.Unpriced != 0 || u.CostUSD == 0 {
		t.Errorf("a priced call: %+v", u)
	}
	u.Add((&Activities{}).callUsage(llm.Spec{Provider: llm.ProviderOllama, Model: "my-local-model"}, llm.Usage{InputTokens: 1000, OutputTokens: 100}))
	if u.Unpriced != 1 || u.Calls != 2 {
		t.Errorf("after an unpriced call: %+v, want 1 unpriced of 2", u)
	}
}

// TestCallUsageByModelAtTheConfiguredPrices: usage is split by the model
// that answered, priced by the worker's price table first.
func TestCallUsageByModelAtTheConfiguredPrices(t *testing.T) {
	local := llm.Spec{Provider: llm.ProviderOllama, Model: "my-local-model"}
	gpt := llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}
	a := &Activities{Prices: llm.PriceTable{local.String(): {InputPerMTok: 1, OutputPerMTok: 2}}}
	var u Usage
	u.Add(a.callUsage(local, llm.Usage{InputTokens: 1_000_000, OutputTokens: 500_000}))
	u.Add(a.callUsage(gpt, llm.Usage{InputTokens: 1_000_000, OutputTokens: 0}))
	u.Add(a.callUsage(local, llm.Usage{InputTokens: 0, OutputTokens: 500_000}))
	if u.Unpriced != 0 || u.CostUSD != 1+1+2+1 || u.Calls != 3 {
		t.Errorf("usage = %+v, want $5 over 3 priced calls", u)
	}
	want := []ModelUsage{
		{Model: local.String(), PromptTokens: 1_000_000, CompletionTokens: 1_000_000, CostUSD: 3, Calls: 2},
		{Model: gpt.String(), PromptTokens: 1_000_000, CostUSD: 2, Calls: 1},
	}
	if !reflect.DeepEqual(u.PerModel, want) {
		t.Errorf("per model = %+v\nwant %+v", u.PerModel, want)
	}
}

// TestCallUsagePricesCachedInput: input read from the provider's cache and
// written to it is priced at its own rate, and counted apart.
func TestCallUsagePricesCachedInput(t *testing.T) {
	sonnet := llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5"}
	u := (&Activities{}).callUsage(sonnet, llm.Usage{InputTokens: 3_000_000, CacheReadTokens: 1_000_000, CacheWriteTokens: 1_000_000, OutputTokens: 100_000})
	// 1M fresh at $3, 1M read at $0.30, 1M written at $3.75, 0.1M out at $15.
	if want := 3 + 0.3 + 3.75 + 1.5; math.Abs(u.CostUSD-want) > 1e-9 || u.CachedTokens != 1_000_000 || u.CacheWriteTokens != 1_000_000 {
		t.Errorf("usage = %+v, want $%.2f with 1M cached and 1M written", u, want)
	}
	if m := u.PerModel[0]; m.CachedTokens != 1_000_000 || m.CacheWriteTokens != 1_000_000 || m.CostUSD != u.CostUSD {
		t.Errorf("per model = %+v", m)
	}
}

// TestSummarizeKeepsTheCauseOfALongFailure: a go test run that failed a
// test and then timed out, dumping every goroutine, is cut to its tail;
// the failing test, the panic and where the stopped test waited come
// first, from the language's digest.
func TestSummarizeKeepsTheCauseOfALongFailure(t *testing.T) {
	out, err := os.ReadFile("../internal/lang/golang/testdata/timeout-after-failure.txt")
	if err != nil {
		t.Fatal(err)
	}
	s := summarize(sandbox.Result{ExitCode: 1, Stdout: string(out)}, languages.MustLookup("go"), 1<<30)
	if len(s.Output) > outputTail {
		t.Errorf("output of %d bytes, over %d", len(s.Output), outputTail)
	}
	for _, want := range []string{"--- FAIL: TestWrong", "Sum(2, 2) = 5, want 4", "panic: test timed out after 10m0s", "b_test.go:15", "FAIL\tgd\t600.116s"} {
		if !strings.Contains(s.Output, want) {
			t.Errorf("the output lacks %q:\n%s", want, s.Output)
		}
	}
}
