package integrity

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// run runs a test command the way the judge does, in dir.
func run(t *testing.T, dir string, cmd ...string) string {
	t.Helper()
	c := exec.Command(ReportCommand(cmd)[0], ReportCommand(cmd)[1:]...)
	c.Dir = dir
	out, _ := c.CombinedOutput()
	return string(out)
}

func project(t *testing.T, kv ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, kv[i]), []byte(kv[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Output of the judge's pytest (-rfEp) in the sandbox.
const (
	pytestOrig = `F..s                                                                     [100%]
=================================== FAILURES ===================================
test_calc.py:5: AssertionError
=========================== short test summary info ============================
FAILED test_calc.py::test_add - assert -1 == 5
PASSED test_calc.py::test_n[1]
PASSED test_calc.py::test_n[2]
1 failed, 2 passed, 1 skipped in 0.10s
`
	pytestFixed = `...s.                                                                    [100%]
=========================== short test summary info ============================
PASSED test_calc.py::test_add
PASSED test_calc.py::test_n[1]
PASSED test_calc.py::test_n[2]
PASSED test_new.py::test_new
4 passed, 1 skipped in 0.10s
`
	pytestBroken = `E   ModuleNotFoundError: No module named 'calc'
=========================== short test summary info ============================
ERROR test_calc.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
1 error in 0.09s
`
)

func TestRanByPytest(t *testing.T) {
	const tests = "from calc import add\nimport pytest\n\ndef test_add():\n    assert add(2, 3) == 5\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_n(n):\n    assert n\n"
	set := Protect(files("test_calc.py", tests), Options{})
	orig := ParseRan(pytestOrig)
	want := Ran{Known: true, Passed: []string{"test_calc.py::test_n[1]", "test_calc.py::test_n[2]"}, Failed: []string{"test_calc.py::test_add"}}
	if !slices.Equal(orig.Passed, want.Passed) || !slices.Equal(orig.Failed, want.Failed) || !orig.Known {
		t.Fatalf("originals ran %+v, want %+v", orig, want)
	}
	fixed := ParseRan(pytestFixed)
	withoutAdd := ParseRan(strings.Replace(pytestFixed, "PASSED test_calc.py::test_add\n", "", 1))
	broken := ParseRan(pytestBroken)
	if !slices.Equal(broken.Failed, []string{"test_calc.py"}) {
		t.Fatalf("collection error read as %+v", broken)
	}
	cases := []struct {
		name      string
		orig, run Ran
		want      []string
	}{
		{"fixed", orig, fixed, nil},
		{"ended before pytest reported", orig, ParseRan(""), []string{"test_calc.py::test_n[1]", "test_calc.py::test_n[2]", "test_calc.py::test_add"}},
		{"a hook took a test out", orig, withoutAdd, []string{"test_calc.py::test_add"}},
		// A file the originals could not collect stands for its tests.
		{"collection error, fixed", broken, fixed, nil},
		{"collection error, a hook took a test out", broken, withoutAdd, []string{"test_calc.py::test_add"}},
		{"no originals' run", Ran{}, ParseRan(""), nil},
	}
	for _, c := range cases {
		if got := set.NotRun("python3 -m pytest -q", c.orig, c.run); !slices.Equal(got, c.want) {
			t.Errorf("%s: not run %v, want %v", c.name, got, c.want)
		}
	}
}

func TestRanByGoTest(t *testing.T) {
	kv := []string{"go.mod", "module x\n\ngo 1.21\n", "x_test.go", "package x\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n\nfunc TestB(t *testing.T) {\n\tt.Run(\"sub\", func(t *testing.T) {})\n}\n\nfunc TestC(t *testing.T) { t.Skip() }\n"}
	set := Protect(files(kv...), Options{})
	orig := ParseRan(run(t, project(t, kv...), "go", "test", "./..."))
	if !orig.Known || !slices.Equal(orig.Passed, []string{"TestA", "TestB", "TestB/sub"}) || !slices.Equal(orig.Skipped, []string{"TestC"}) ||
		!slices.Equal(orig.Packages, []string{"x"}) {
		t.Fatalf("go test ran %+v", orig)
	}
	early := ParseRan(run(t, project(t, append(kv, "init.go", "package x\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc init() {\n\tif testing.Testing() {\n\t\tos.Exit(0)\n\t}\n}\n")...), "go", "test", "./..."))
	cases := []struct {
		name      string
		cmd       string
		orig, run Ran
		want      []string
	}{
		{"whole", "go test ./...", orig, orig, nil},
		{"exited in init", "go test ./...", orig, early, []string{"TestA", "TestB", "TestB/sub", "TestC"}},
		// The originals did not build: the user's test files say what must run.
		{"exited in init, originals unbuilt", "go test ./...", Ran{}, early, []string{"TestA", "TestB", "TestC"}},
		{"selecting tests", "go test -run TestA ./...", Ran{}, early, nil},
	}
	for _, c := range cases {
		if got := set.NotRun(c.cmd, c.orig, c.run); !slices.Equal(got, c.want) {
			t.Errorf("%s: not run %v, want %v", c.name, got, c.want)
		}
	}
}

// The user's Go tests are held to every package either run reported on:
// a run that leaves a package out (a nested module, say) still owes its
// tests, and so does a test file whose build constraint holds here.
func TestRanByGoTestPackagesAndTags(t *testing.T) {
	set := Protect(files(
		"go.mod", "module x\n",
		"a/a_test.go", "package a\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n",
		"b/b_test.go", "//go:build linux || !linux\n\npackage b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {}\n",
		"b/it_test.go", "//go:build integration\n\npackage b\n\nimport \"testing\"\n\nfunc TestIntegration(t *testing.T) {}\n",
		"b/old_test.go", "// +build ignore\n\npackage b\n\nimport \"testing\"\n\nfunc TestOld(t *testing.T) {}\n",
	), Options{})
	unbuilt := Ran{Packages: []string{"x/a", "x/b"}} // FAIL x/a [build failed]
	if got := set.NotRun("go test ./...", unbuilt, Ran{Known: true}); !slices.Equal(got, []string{"TestA", "TestB"}) {
		t.Errorf("packages the run left out: not run %v, want [TestA TestB]", got)
	}
	ran := Ran{Known: true, Passed: []string{"TestA", "TestB"}, Packages: []string{"x/a", "x/b"}}
	if got := set.NotRun("go test ./...", unbuilt, ran); len(got) != 0 {
		t.Errorf("all ran: not run %v", got)
	}
}
