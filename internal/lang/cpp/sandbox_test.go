package cpp_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/cpp"
	"github.com/autocoder/autocoder/internal/workspace"
)

// exampleDir is the C++ example the end-to-end tests and the README use.
var exampleDir = filepath.Join("..", "..", "..", "examples", "cpp")

// fixedMedian is examples/cpp's src/stats.cpp with its bug fixed.
const fixedMedian = `#include "stats/stats.h"

#include <algorithm>
#include <numeric>

namespace stats {

double mean(const std::vector<double> &values) {
    if (values.empty()) {
        return 0;
    }
    return std::accumulate(values.begin(), values.end(), 0.0) / values.size();
}

double median(std::vector<double> values) {
    if (values.empty()) {
        return 0;
    }
    std::sort(values.begin(), values.end());
    std::size_t mid = values.size() / 2;
    if (values.size() % 2 == 0) {
        return (values[mid - 1] + values[mid]) / 2;
    }
    return values[mid];
}

}  // namespace stats
`

// withFile is files with path's content replaced.
func withFile(files []workspace.File, path, data string) []workspace.File {
	out := slices.Clone(files)
	for i, f := range out {
		if f.Path == path {
			out[i] = workspace.File{Path: path, Data: []byte(data)}
		}
	}
	return out
}

// failingIn are the names lang.Failure's patterns find in out.
func failingIn(l lang.Language, out string) []string {
	var names []string
	for _, re := range l.Failure.Failing {
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			if !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
	}
	return names
}

// The example fails with the default command, on both backends, and the
// failure is read; fixed, it passes.
func TestExample(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) { testExampleOn(t, backend) })
	}
}

func testExampleOn(t *testing.T, backend string) {
	l := cpp.Language()
	broken := project(t, exampleDir)

	code, out := runOn(t, backend, broken, nil)
	if code == 0 {
		t.Fatalf("the broken example passed:\n%s", out)
	}
	f := l.Failure.Parse(strings.Split(out, "\n"))
	if f.Kind != "gtest:test-fail" || !slices.Contains(f.Keys, "[  FAILED  ] Median.EvenCountAveragesTheMiddleTwo") {
		t.Errorf("Parse = %+v\n%s", f, out)
	}
	if got := failingIn(l, out); !slices.Equal(got, []string{"Median.EvenCountAveragesTheMiddleTwo"}) {
		t.Errorf("failing = %q\n%s", got, out)
	}
	if d := l.Failure.Digest(out); !strings.Contains(d, "stats_test.cpp:18: Failure") || !strings.Contains(d, "Which is: 3") {
		t.Errorf("digest lacks the assertion:\n%s", d)
	}

	if code, out := runOn(t, backend, withFile(broken, "src/stats.cpp", fixedMedian), nil); code != 0 {
		t.Errorf("the fixed example fails (exit %d):\n%s", code, out)
	}
}

// A step's check: Compile builds without running the tests, so a wrong
// result passes and a compile error fails; Named runs only the named
// tests.
func TestCheckCommandsOnBwrap(t *testing.T) {
	tests := cpp.Language().Tests
	broken := project(t, exampleDir)

	if code, out := runIn(t, broken, tests.Compile); code != 0 || strings.Contains(out, "Test #") {
		t.Errorf("Compile of the example: exit %d, want 0 and no test run:\n%s", code, out)
	}
	if code, out := runIn(t, project(t, filepath.Join("testdata", "projects", "compile-cpp")), tests.Compile); code == 0 || !strings.Contains(out, "error: ") {
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
		code, out := runIn(t, broken, cmd)
		if (code == 0) != c.pass || !strings.Contains(out, c.ran) {
			t.Errorf("Named(%q): exit %d, want pass %v and %q:\n%s", c.names, code, c.pass, c.ran, out)
		}
	}
}

// Without CMakeLists.txt a Makefile's test target runs the tests; with
// neither, the command says so.
func TestWithoutCMakeOnBwrap(t *testing.T) {
	makeProject := project(t, filepath.Join("testdata", "projects", "makefile"))
	code, out := runIn(t, makeProject, nil)
	if f := cpp.Language().Failure.Parse(strings.Split(out, "\n")); code == 0 || f.Kind != "cpp:assert" {
		t.Errorf("make test of a failing project: exit %d, finding %+v:\n%s", code, f, out)
	}
	fixed := withFile(makeProject, "clamp.c", "int clamp(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }\n")
	if code, out := runIn(t, fixed, nil); code != 0 {
		t.Errorf("make test of the fixed project: exit %d:\n%s", code, out)
	}

	loose := []workspace.File{{Path: "main.c", Data: []byte("int main(void) { return 0; }\n")}}
	if code, out := runIn(t, loose, nil); code == 0 || !strings.Contains(out, "no CMakeLists.txt or Makefile") {
		t.Errorf("loose files: exit %d:\n%s", code, out)
	}
}
