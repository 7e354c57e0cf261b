package cpp_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/cpp"
	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/workspace"
)

// medianFix fixes examples/cpp's bug: the median of an even count is the
// mean of the middle two.
var medianFix = langtest.Fix{Path: "src/stats.cpp",
	Old: "return values[values.size() / 2];",
	New: "std::size_t mid = values.size() / 2;\n    return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;"}

// The example fails with the default command, on both backends, and the
// failure is read; fixed, it passes.
func TestExample(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) { testExampleOn(t, backend) })
	}
}

func testExampleOn(t *testing.T, backend string) {
	l := cpp.Language()
	r := runnerOn(t, backend)
	broken := langtest.Example(t, "cpp")

	code, out := run(t, r, broken, nil)
	if code == 0 {
		t.Fatalf("the broken example passed:\n%s", out)
	}
	f := l.Failure.Parse(strings.Split(out, "\n"))
	if f.Kind != "gtest:test-fail" || !slices.Contains(f.Keys, "[  FAILED  ] Median.EvenCountAveragesTheMiddleTwo") {
		t.Errorf("Parse = %+v\n%s", f, out)
	}
	if got := langtest.Failing(l.Failure.Failing, out); !slices.Equal(got, []string{"Median.EvenCountAveragesTheMiddleTwo"}) {
		t.Errorf("failing = %q\n%s", got, out)
	}
	if d := l.Failure.Digest(out); !strings.Contains(d, "stats_test.cpp:18: Failure") || !strings.Contains(d, "Which is: 3") {
		t.Errorf("digest lacks the assertion:\n%s", d)
	}

	if code, out := run(t, r, langtest.Apply(t, broken, medianFix), nil); code != 0 {
		t.Errorf("the fixed example fails (exit %d):\n%s", code, out)
	}
}

// A step's check: Compile builds without running the tests, so a wrong
// result passes and a compile error fails; Named runs only the named
// tests.
func TestCheckCommandsOnBwrap(t *testing.T) {
	tests := cpp.Language().Tests
	r := runnerOn(t, "bwrap")
	broken := langtest.Example(t, "cpp")

	if code, out := run(t, r, broken, tests.Compile); code != 0 || strings.Contains(out, "Test #") {
		t.Errorf("Compile of the example: exit %d, want 0 and no test run:\n%s", code, out)
	}
	if code, out := run(t, r, langtest.Project(t, filepath.Join("testdata", "projects", "compile-cpp")), tests.Compile); code == 0 || !strings.Contains(out, "error: ") {
		t.Errorf("Compile of a project that does not compile: exit %d:\n%s", code, out)
	}

	for _, c := range []struct {
		names []string
		pass  bool
		ran   string
	}{
		{[]string{"Mean.AveragesValues", "Median.OddCountIsTheMiddle"}, true, "100% tests passed, 0 tests failed out of 2"},
		{[]string{"Median.EvenCountAveragesTheMiddleTwo"}, false, "0% tests passed, 1 tests failed out of 1"},
		// A name ctest does not know selects nothing, which fails.
		{[]string{"Median.Even"}, false, "No tests were found"},
	} {
		cmd, err := tests.Named(c.names)
		if err != nil {
			t.Fatal(err)
		}
		code, out := run(t, r, broken, cmd)
		if (code == 0) != c.pass || !strings.Contains(out, c.ran) {
			t.Errorf("Named(%q): exit %d, want pass %v and %q:\n%s", c.names, code, c.pass, c.ran, out)
		}
	}
}

// Without CMakeLists.txt a Makefile's test target runs the tests; with
// neither, the command says so.
func TestWithoutCMakeOnBwrap(t *testing.T) {
	r := runnerOn(t, "bwrap")
	makeProject := langtest.Project(t, filepath.Join("testdata", "projects", "makefile"))
	code, out := run(t, r, makeProject, nil)
	if f := cpp.Language().Failure.Parse(strings.Split(out, "\n")); code == 0 || f.Kind != "cpp:assert" {
		t.Errorf("make test of a failing project: exit %d, finding %+v:\n%s", code, f, out)
	}
	fixed := langtest.WithFile(makeProject, workspace.File{Path: "clamp.c", Data: []byte("int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }\n")})
	if code, out := run(t, r, fixed, nil); code != 0 {
		t.Errorf("make test of the fixed project: exit %d:\n%s", code, out)
	}

	loose := []workspace.File{{Path: "main.c", Data: []byte("int main(void) { return 0; }\n")}}
	if code, out := run(t, r, loose, nil); code == 0 || !strings.Contains(out, "no CMakeLists.txt or Makefile") {
		t.Errorf("loose files: exit %d:\n%s", code, out)
	}
}
