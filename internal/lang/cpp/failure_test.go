package cpp

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/langtest"
)

// The outputs under testdata/output are real runs of the default test
// command over the projects under testdata/projects (TestRecordOutputs).
func TestParseRecordedOutputs(t *testing.T) {
	cases := []struct {
		file, kind, shape, key string
		failing                []string
		digest                 []string // lines the digest keeps
	}{
		{"cmake", "cmake:error", "add_executable: Cannot find source file:", "CMake Error at CMakeLists.txt:4 (add_executable):",
			nil, []string{"CMake Error at CMakeLists.txt:4 (add_executable):", "    parse.c", "  No SOURCES given to target: parse_test"}},
		{"compile-c", "cpp:error", "<id> undeclared (first use in this function)", "/work/src/counter.c:4:24: error: ‘total’ undeclared (first use in this function)",
			nil, []string{"/work/src/counter.c:4:24: error: ‘total’ undeclared (first use in this function)", "    4 |         if (*s == ' ') total++;"}},
		{"compile-cpp", "cpp:error", "<str> has no member named <id>", "/work/shapes_test.cpp:5:14: error: ‘struct Rect’ has no member named ‘perimeter’",
			nil, []string{"/work/shapes_test.cpp:5:14: error: ‘struct Rect’ has no member named ‘perimeter’", "    5 |     assert(r.perimeter() == 10);"}},
		{"link", "cpp:link", "undefined reference to <id>", "/work/temp_test.c:2: undefined reference to `celsius_to_fahrenheit'",
			nil, []string{"/work/temp_test.c:2: undefined reference to `celsius_to_fahrenheit'"}},
		{"segfault", "cpp:segfault", "Segmentation fault", "1/1 Test #1: list_length ......................***Exception: SegFault  0.01 sec",
			[]string{"list_length"}, []string{"1/1 Test #1: list_length ......................***Exception: SegFault  0.01 sec", "\t  1 - list_length (SEGFAULT)"}},
		{"exception", "cpp:uncaught", "std::out_of_range: vector::<id>: __n (which is <n>) >= this->size() (which is <n>)", "terminate called after throwing an instance of 'std::out_of_range'",
			[]string{"ring_wraps"}, []string{"  what():  vector::_M_range_check: __n (which is 3) >= this->size() (which is 3)"}},
		{"assert", "cpp:assert", "Assertion <id>(&s) == <n> failed", "stack_test: /work/stack_test.c:8: main: Assertion `stack_pop(&s) == 9' failed.",
			[]string{"stack_push_pop"}, []string{"stack_test: /work/stack_test.c:8: main: Assertion `stack_pop(&s) == 9' failed."}},
		{"makefile", "cpp:assert", "Assertion <id>(<n>, <n>, <n>) == <n> failed", "clamp_test: clamp_test.c:4: main: Assertion `clamp(5, 0, 10) == 5' failed.",
			nil, []string{"clamp_test: clamp_test.c:4: main: Assertion `clamp(5, 0, 10) == 5' failed."}},
		{"gtest", "gtest:test-fail", "Expected equality of these values: <id>(<n>, <n>)", "[  FAILED  ] Calc.Adds",
			[]string{"Calc.Adds", "Calc.AddsNegative"}, []string{"/work/tests/calc_test.cpp:3: Failure", "    Which is: -1", "/work/tests/calc_test.cpp:5: Failure", "negative sum", "\t  3 - Calc.AddsNegative (Failed)"}},
		{"catch2", "catch2:test-fail", "REQUIRE( <id>(<id>) == <str> )", "/work/tests/strings_test.cpp:4: FAILED:",
			[]string{"shout upper-cases every letter"}, []string{"  REQUIRE( shout(\"hey\") == \"HEY!\" )", "  \"hEY!\" == \"HEY!\""}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out := langtest.Output(t, filepath.Join("output", c.file+".txt"))
			langtest.CheckFinding(t, Parse(strings.Split(out, "\n")), lang.Finding{Kind: c.kind, Shape: c.shape, Keys: []string{c.key}})
			if got := langtest.Failing(failing, out); !slices.Equal(got, c.failing) {
				t.Errorf("failing = %q, want %q", got, c.failing)
			}
			d := Digest(out)
			for _, l := range c.digest {
				if !slices.Contains(strings.Split(d, "\n"), l) {
					t.Errorf("digest lacks %q:\n%s", l, d)
				}
			}
			if strings.Contains(d, "Building C") || strings.Contains(d, "Running main()") {
				t.Errorf("digest keeps build progress or framework noise:\n%s", d)
			}
		})
	}
}

func TestParseAndDigestIgnoreAPassingRun(t *testing.T) {
	out := `-- Configuring done
[100%] Built target calc_test
Test project /tmp/build
    Start 1: Calc.Adds
1/1 Test #1: Calc.Adds ........................   Passed    0.01 sec

100% tests passed, 0 tests failed out of 1`
	if f := Parse(strings.Split(out, "\n")); f.Kind != "" {
		t.Errorf("Parse = %+v, want nothing", f)
	}
	if d := Digest(out); d != "" {
		t.Errorf("Digest = %q, want empty", d)
	}
}

// A long run's digest stays within its bound and still ends with ctest's
// list of the failed tests, however much each of them printed.
func TestDigestIsBoundedAndKeepsTheFailedList(t *testing.T) {
	var b strings.Builder
	b.WriteString("Test project /tmp/build\n")
	var summary []string
	for i := range 40 {
		name := fmt.Sprintf("Suite.Case%d", i)
		fmt.Fprintf(&b, "%d/40 Test #%d: %s ...***Failed    0.01 sec\n", i+1, i+1, name)
		for range 50 {
			b.WriteString("/work/t.cpp:3: Failure\nExpected equality of these values:\n")
		}
		summary = append(summary, fmt.Sprintf("\t  %d - %s (Failed)", i+1, name))
	}
	b.WriteString("\nThe following tests FAILED:\n" + strings.Join(summary, "\n") + "\nErrors while running CTest\n")
	d := Digest(b.String())
	if len(d) > digestBytes {
		t.Errorf("digest of %d bytes, want at most %d", len(d), digestBytes)
	}
	if !strings.HasPrefix(d, "1/40 Test #1: Suite.Case0 ...***Failed") {
		t.Errorf("digest starts %q, want the first failed test", d[:min(len(d), 80)])
	}
	if want := strings.Join(summary[:maxSummaryLines-1], "\n"); !strings.Contains(d, "The following tests FAILED:\n"+want) {
		t.Errorf("digest lacks the list of the failed:\n%s", d)
	}
}
