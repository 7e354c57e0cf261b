package cpp_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang/cpp"
	"github.com/autocoder/autocoder/internal/lang/languages"
)

func TestIsTestFile(t *testing.T) {
	isTest := cpp.Language().Tests.IsTestFile
	for p, want := range map[string]bool{
		"tests/calc_test.cpp":     true,
		"tests/CMakeLists.txt":    true,
		"test/main.c":             true,
		"src/stack_test.c":        true,
		"test_parse.c":            true,
		"lib/ring_tests.cc":       true,
		"lib/ring_unittest.cxx":   true,
		"src/stack.c":             false,
		"include/test_utils.h":    false,
		"CMakeLists.txt":          false,
		"src/latest.cpp":          false,
		"docs/test_plan_test.txt": false,
	} {
		if got := isTest(p); got != want {
			t.Errorf("IsTestFile(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	cases := []struct {
		name          string
		root          []string
		testCmd, task string
		want          string
	}{
		{"CMake project", []string{"CMakeLists.txt", "src"}, "", "", "cpp"},
		{"a Makefile alone marks nothing", []string{"Makefile", "main.py"}, "", "", "python"},
		{"Makefile project by its test command", []string{"Makefile", "clamp.c"}, "make test", "", "cpp"},
		{"Python project with a CMake extension", []string{"pyproject.toml", "CMakeLists.txt"}, "pytest", "", "python"},
		{"task in C", nil, "", "write a ring buffer in C with tests", "cpp"},
		{"task in C++", nil, "", "Implement an LRU cache in C++17", "cpp"},
		{"task with CMake", nil, "", "a CMake library that parses INI files", "cpp"},
		{"a C-grade task is not C", nil, "", "grade the essays: A, B or C", "python"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := languages.Detect(c.root, c.testCmd, c.task); got.Language.Name != c.want {
				t.Errorf("Detect = %s (%s), want %s", got.Language.Name, got.Reason, c.want)
			}
		})
	}
}

func TestLookupByAlias(t *testing.T) {
	for _, name := range []string{"cpp", "C", "c++", "CXX"} {
		if l, err := languages.Lookup(name); err != nil || l.Name != "cpp" {
			t.Errorf("Lookup(%q) = %q, %v", name, l.Name, err)
		}
	}
}
