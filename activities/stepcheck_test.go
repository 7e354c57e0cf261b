package activities

import (
	"github.com/autocoder/autocoder/internal/lang/languages"
	"strings"
	"testing"
)

// A step is judged by the compile check and the tests it names, not the
// whole suite: it passes where only the finished work would pass them all,
// and fails on a compile error, a failing named test, a named test that
// does not exist, or a change to the user's tests.
func TestStepScopeCheck(t *testing.T) {
	const (
		goMod     = "module example.com/calc\n\ngo 1.21\n"
		goCalc    = "package calc\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Mul(a, b int) int { return 0 } // later step\n"
		goAddTest = "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n"
		goMulTest = "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(\"mul\")\n\t}\n}\n"
		pyCalc    = "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return 0  # later step\n"
		pyAdd     = "from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n"
		pyMul     = "from calc import mul\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
	)
	goFiles := map[string]string{"go.mod": goMod, "calc.go": goCalc, "add_test.go": goAddTest, "mul_test.go": goMulTest}
	pyFiles := map[string]string{"calc.py": pyCalc, "test_add.py": pyAdd, "test_mul.py": pyMul}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name, lang string
		files      map[string]string
		scope      string
		tests      []string
		guarded    bool // the input snapshot is the plain files
		passed     bool
		want       string
	}{
		{"go whole suite fails", "go", goFiles, ScopeAll, nil, false, false, "TestMul"},
		{"go step passes on its test", "go", goFiles, ScopeStep, []string{"TestAdd"}, true, true, ""},
		{"go step with no tests compiles", "go", goFiles, ScopeStep, nil, false, true, ""},
		{"go compile error", "go", with(goFiles, "calc.go", goCalc+"\nfunc Bad() int { return \"x\" }\n"), ScopeStep, []string{"TestAdd"}, false, false, "calc.go"},
		{"go compile error in a test", "go", with(goFiles, "mul_test.go", goMulTest+"\nvar _ int = \"x\"\n"), ScopeStep, nil, false, false, "mul_test.go"},
		{"go named test fails", "go", goFiles, ScopeStep, []string{"TestMul"}, false, false, "TestMul"},
		{"go named test missing", "go", goFiles, ScopeStep, []string{"TestNope"}, false, false, "TestNope"},
		{"python whole suite fails", "python", pyFiles, ScopeAll, nil, false, false, "test_mul"},
		{"python step passes on its test", "python", pyFiles, ScopeStep, []string{"test_add.py::test_add"}, true, true, ""},
		{"python syntax error", "python", with(pyFiles, "calc.py", "def add(a, b:\n"), ScopeStep, []string{"test_add.py"}, false, false, "syntax"},
		{"python named test fails", "python", pyFiles, ScopeStep, []string{"test_mul.py"}, false, false, "test_mul"},
		{"python weakened test", "python", with(pyFiles, "test_add.py", "def test_add():\n    pass\n"), ScopeStep, []string{"test_add.py"}, true, false, "test_add.py"},
	}
	sb := realSandbox(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvAt(t, "")
			e.acts.Sandbox = sb
			in := CheckInput{SnapshotID: e.snapshot(t, tc.files), Language: tc.lang, Scope: tc.scope, Tests: tc.tests}
			if tc.guarded {
				base := pyFiles
				if tc.lang == "go" {
					base = goFiles
				}
				in.InputSnapshot = e.snapshot(t, base)
			}
			s := run[TestSummary](t, e, e.acts.Check, in)
			if s.Passed != tc.passed || !strings.Contains(s.Output+strings.Join(s.FailingTests, " "), tc.want) {
				t.Fatalf("passed %v, want %v (and %q in the output): %+v", s.Passed, tc.passed, tc.want, s)
			}
		})
	}
}

func TestTestsCommand(t *testing.T) {
	cases := []struct {
		lang  string
		tests []string
		want  string
	}{
		{"go", nil, "go test -count=1 -run ^$ ./..."},
		{"go", []string{"TestA", "TestB/sub", "TestA"}, "go test -count=1 -run ^(TestA|TestB)$ ./..."},
		{"go", []string{"TestA", "./parser/..."}, "go test -count=1 -run ^(TestA)$ ./parser/..."},
		{"python", []string{"tests/test_a.py::test_x"}, "python3 -m pytest -q tests/test_a.py::test_x"},
	}
	for _, tc := range cases {
		cmd, err := testsCommand(languages.MustLookup(tc.lang), tc.tests)
		if err != nil || strings.Join(cmd, " ") != tc.want {
			t.Errorf("%s %q: %q, %v; want %q", tc.lang, tc.tests, cmd, err, tc.want)
		}
	}
	for _, bad := range []string{"-p", "", "a\nb"} {
		if _, err := testsCommand(languages.MustLookup("python"), []string{bad}); err == nil {
			t.Errorf("%q accepted as a test name", bad)
		}
	}
}
