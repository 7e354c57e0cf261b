package starter

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

const (
	userTest   = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
	weakTest   = "def test_add():\n    assert True\n"
	skipAll    = "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for i in items:\n        i.add_marker(pytest.mark.skip)\n"
	fixedCalc  = "def add(a, b):\n    return a + b\n"
	brokenCalc = "def add(a, b):\n    return a - b\n"
)

func fileSet(kv ...string) []workspace.File {
	var out []workspace.File
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, workspace.File{Path: kv[i], Data: []byte(kv[i+1])})
	}
	return out
}

var (
	inputFiles  = fileSet("calc.py", brokenCalc, "test_calc.py", userTest)
	resultFiles = fileSet("calc.py", fixedCalc, "test_calc.py", weakTest, "conftest.py", skipAll, "test_new.py", "def test_new():\n    pass\n")
)

// storeWith opens a SQLite store holding the input and result snapshots.
func storeWith(t *testing.T) (store.Store, string, string) {
	t.Helper()
	return storeOf(t, inputFiles, resultFiles)
}

// storeOf is a SQLite store holding a task's input and result snapshots.
func storeOf(t *testing.T, input, result []workspace.File) (store.Store, string, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "autocoder.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	in, err := st.PutSnapshot(ctx, input)
	if err != nil {
		t.Fatal(err)
	}
	out, err := st.PutSnapshot(ctx, result)
	if err != nil {
		t.Fatal(err)
	}
	return st, in, out
}

func TestFinalWriteKeepsTheUsersTests(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		t.Run(map[bool]string{false: "guarded", true: "edits allowed"}[allowed], func(t *testing.T) {
			st, in, out := storeWith(t)
			var stderr bytes.Buffer
			f := NewFactory(config{}, IOStreams{ErrOut: &stderr})
			f.store = st
			dir := t.TempDir()
			if err := workspace.WriteDir(dir, inputFiles); err != nil {
				t.Fatal(err)
			}
			status := workflows.Status{InputSnapshot: in, TestCmd: "python3 -m pytest -q", TestEditsAllowed: allowed}
			if _, err := writeSnapshot(context.Background(), f, "autocoder-1", status, out, dir, true); err != nil {
				t.Fatal(err)
			}
			read := func(name string) string {
				b, _ := os.ReadFile(filepath.Join(dir, name))
				return string(b)
			}
			if read("calc.py") != fixedCalc || read("test_new.py") == "" {
				t.Errorf("the result's code and new test were not written: %q, %q", read("calc.py"), read("test_new.py"))
			}
			if allowed {
				if read("test_calc.py") != weakTest || read("conftest.py") != skipAll || stderr.Len() > 0 {
					t.Errorf("edits allowed, yet the result was not written as it is (stderr %q)", stderr.String())
				}
				return
			}
			if read("test_calc.py") != userTest {
				t.Errorf("the user's test was overwritten: %q", read("test_calc.py"))
			}
			if _, err := os.Stat(filepath.Join(dir, "conftest.py")); err == nil {
				t.Error("a conftest.py that skips the user's tests was written")
			}
			for _, want := range []string{"kept your tests as they were: the task changed the user's test file test_calc.py", "conftest.py"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}

func TestPatchShowsChangesToTheUsersTestsFirst(t *testing.T) {
	var out bytes.Buffer
	st := workflows.Status{TestCmd: "python3 -m pytest -q"}
	if err := writePatch(context.Background(), &out, false, st, inputFiles, resultFiles); err != nil {
		t.Fatal(err)
	}
	patch := out.String()
	if !strings.HasPrefix(patch, "# This patch changes the user's tests: conftest.py, test_calc.py\n") {
		t.Errorf("the patch does not start with the changes to the user's tests:\n%s", patch)
	}
	tests, code, added := strings.Index(patch, "+++ b/test_calc.py"), strings.Index(patch, "+++ b/calc.py"), strings.Index(patch, "+++ b/test_new.py")
	if tests < 0 || code < 0 || added < 0 || tests > code || strings.Index(patch, "+++ b/conftest.py") > code {
		t.Errorf("want the user's tests' diffs before the code's:\n%s", patch)
	}

	out.Reset()
	if err := writePatch(context.Background(), &out, false, st, inputFiles, fileSet("calc.py", fixedCalc, "test_calc.py", userTest)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "#") || !strings.HasPrefix(out.String(), "diff --git a/calc.py") {
		t.Errorf("a patch leaving the tests alone has a header:\n%s", out.String())
	}
}

func TestPatchOnATerminalShowsControlCharacters(t *testing.T) {
	hostile := fileSet("calc.py", "print('\x1b]52;c;aGk=\x07\x1b[2K')\n")
	for _, forTerminal := range []bool{false, true} {
		var out bytes.Buffer
		if err := writePatch(context.Background(), &out, forTerminal, workflows.Status{}, nil, hostile); err != nil {
			t.Fatal(err)
		}
		raw := strings.Contains(out.String(), "\x1b]52;")
		if forTerminal && (raw || !strings.Contains(out.String(), `\x1b]52;c;aGk=\x07\x1b[2K`)) {
			t.Errorf("on a terminal the escapes are not made visible:\n%q", out.String())
		}
		if !forTerminal && !raw {
			t.Errorf("piped, the patch is not exact:\n%q", out.String())
		}
	}
}

func TestStatusShowsFindings(t *testing.T) {
	var out bytes.Buffer
	printStatus(&out, "autocoder-1", workflows.Status{
		Task: "fix add", Phase: workflows.PhaseFailed, InputSnapshot: "in", MaxIterations: 1, Iteration: 1,
		Checkpoints: []workflows.Checkpoint{{N: 1, Step: 1, Iteration: 1, Time: time.Now(), Summary: "integrity: deleted the user's test file test_calc.py",
			Findings: []integrity.Finding{{Kind: integrity.KindDeleted, Path: "test_calc.py"}, {Kind: integrity.KindConfig, Path: "pytest.ini", Detail: "passes -k to pytest"}}}},
	})
	for _, want := range []string{
		"the user's tests are the judge",
		"! deleted the user's test file test_calc.py",
		"! added or changed pytest.ini, which decides how the user's tests run (passes -k to pytest)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}

// TestOneJudge: a project with tests and no --test-cmd is judged by its
// tests, run by the language's command; run's announcement, status and the
// prompt (through the test command) all say so. Only a project without
// tests leaves them to the model, and then everything says that.
func TestOneJudge(t *testing.T) {
	project := []workspace.File{
		{Path: "calc.py", Data: []byte("def add(a, b): ...\n")},
		{Path: "tests/test_calc.py", Data: []byte("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")},
	}
	noTests := project[:1]
	for _, tt := range []struct {
		name      string
		in        workflows.TaskInput
		files     []workspace.File
		testCmd   string
		announce  string
		statusSay string
	}{
		{"tests, no command", workflows.TaskInput{Language: "python"}, project, "python3 -m pytest -q",
			"are the judge, run by `python3 -m pytest -q`: tests/test_calc.py", "the user's tests are the judge"},
		{"tests and a command", workflows.TaskInput{Language: "python", TestCmd: "pytest tests"}, project, "pytest tests",
			"are the judge, run by `pytest tests`: tests/test_calc.py", "the user's tests are the judge"},
		{"go tests", workflows.TaskInput{Language: "go"}, []workspace.File{{Path: "calc_test.go", Data: []byte("package calc\n")}}, "go test ./...",
			"run by `go test ./...`", "the user's tests are the judge"},
		{"no tests", workflows.TaskInput{Language: "python"}, noTests, "",
			"the model writes the tests that decide success", "written by the model"},
		{"only another language's tests", workflows.TaskInput{Language: "python"}, append(slices.Clone(noTests), workspace.File{Path: "web/app.test.ts"}), "",
			"the model writes the tests that decide success", "written by the model"},
	} {
		in, err := judgedByUsersTests(tt.in, tt.files)
		if err != nil {
			t.Fatal(err)
		}
		if in.TestCmd != tt.testCmd {
			t.Errorf("%s: test command %q, want %q", tt.name, in.TestCmd, tt.testCmd)
		}
		var announced bytes.Buffer
		announceUsersTests(&announced, in, tt.files)
		if !strings.Contains(announced.String(), tt.announce) {
			t.Errorf("%s: run says %q, want %q", tt.name, announced.String(), tt.announce)
		}
		// The workflow's own rule: no test command, tests by the model.
		st := workflows.Status{InputSnapshot: "in", TestCmd: in.TestCmd, TestsByModel: in.TestCmd == ""}
		var status bytes.Buffer
		printTestGuard(&status, st)
		if !strings.Contains(status.String(), tt.statusSay) {
			t.Errorf("%s: status says %q, want %q", tt.name, status.String(), tt.statusSay)
		}
	}
}
