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
	orig := ParseRan(pytestOrig)
	want := Ran{Known: true, Passed: []string{"test_calc.py::test_n[1]", "test_calc.py::test_n[2]"}, Failed: []string{"test_calc.py::test_add"}}
	if !slices.Equal(orig.Passed, want.Passed) || !slices.Equal(orig.Failed, want.Failed) || !orig.Known {
		t.Fatalf("originals ran %+v, want %+v", orig, want)
	}
	fixed := ParseRan(pytestFixed)
	if m := orig.Missing(fixed); len(m) != 0 {
		t.Errorf("a fixed run misses %v", m)
	}
	// The code ended the run before pytest reported anything.
	if m := orig.Missing(ParseRan("")); len(m) != 3 {
		t.Errorf("a run that ended early misses %v, want all three", m)
	}
	// A test removed from the run by a hook (not deselected, not skipped).
	if m := orig.Missing(ParseRan(strings.Replace(pytestFixed, "PASSED test_calc.py::test_add\n", "", 1))); !slices.Equal(m, []string{"test_calc.py::test_add"}) {
		t.Errorf("a run without test_add misses %v", m)
	}
	// A collection error in the originals is matched by the file's tests.
	broken := ParseRan(pytestBroken)
	if !slices.Equal(broken.Failed, []string{"test_calc.py"}) || len(broken.Missing(fixed)) != 0 {
		t.Errorf("collection error: %+v misses %v", broken, broken.Missing(fixed))
	}
}

func TestRanByGoTest(t *testing.T) {
	kv := []string{"go.mod", "module x\n\ngo 1.21\n", "x_test.go", "package x\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n\nfunc TestB(t *testing.T) {\n\tt.Run(\"sub\", func(t *testing.T) {})\n}\n\nfunc TestC(t *testing.T) { t.Skip() }\n"}
	orig := ParseRan(run(t, project(t, kv...), "go", "test", "./..."))
	if !orig.Known || !slices.Equal(orig.Passed, []string{"TestA", "TestB", "TestB/sub"}) || !slices.Equal(orig.Skipped, []string{"TestC"}) ||
		!slices.Equal(orig.Packages, []string{"x"}) {
		t.Fatalf("go test ran %+v", orig)
	}
	early := ParseRan(run(t, project(t, append(kv, "init.go", "package x\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc init() {\n\tif testing.Testing() {\n\t\tos.Exit(0)\n\t}\n}\n")...), "go", "test", "./..."))
	if m := orig.Missing(early); len(m) != 3 {
		t.Errorf("a run that exited in init misses %v, want all three", m)
	}

	// Without a run of the originals (their code did not build), the
	// user's test files say what a run must report.
	set := Protect(files(kv...), Options{})
	if m := set.UnreportedGoTests("go test ./...", orig); len(m) != 0 {
		t.Errorf("a whole run misses %v", m)
	}
	if m := set.UnreportedGoTests("go test ./...", early); !slices.Equal(m, []string{"TestA", "TestB", "TestC"}) {
		t.Errorf("a run that exited in init misses %v, want all three", m)
	}
	if m := set.UnreportedGoTests("go test -run TestA ./...", early); m != nil {
		t.Errorf("a run selecting tests misses %v", m)
	}
}
