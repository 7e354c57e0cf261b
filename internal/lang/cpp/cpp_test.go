package cpp_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang/cpp"
	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/lang/languages"
)

func TestIsTestFile(t *testing.T) {
	langtest.CheckIsTestFile(t, cpp.Language().Tests.IsTestFile, map[string]bool{
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
	})
}

func TestDetect(t *testing.T) {
	for _, c := range []langtest.DetectCase{
		{Name: "CMake project", Root: []string{"CMakeLists.txt", "src"}, Want: "cpp"},
		{Name: "a Makefile alone marks nothing", Root: []string{"Makefile", "main.py"}, Want: "python"},
		{Name: "Makefile project by its test command", Root: []string{"Makefile", "clamp.c"}, TestCmd: "make test", Want: "cpp"},
		{Name: "Python project with a CMake extension", Root: []string{"pyproject.toml", "CMakeLists.txt"}, TestCmd: "pytest", Want: "python"},
		{Name: "task in C", Task: "write a ring buffer in C with tests", Want: "cpp"},
		{Name: "task in C++", Task: "Implement an LRU cache in C++17", Want: "cpp"},
		{Name: "task with CMake", Task: "a CMake library that parses INI files", Want: "cpp"},
		{Name: "a C-grade task is not C", Task: "grade the essays: A, B or C", Want: "python"},
	} {
		d := languages.Detect(c.Root, c.TestCmd, c.Task)
		c.Check(t, d.Language.Name, d.Reason)
	}
}

func TestLookupByAlias(t *testing.T) {
	for _, name := range []string{"cpp", "C", "c++", "CXX"} {
		if l, err := languages.Lookup(name); err != nil || l.Name != "cpp" {
			t.Errorf("Lookup(%q) = %q, %v", name, l.Name, err)
		}
	}
}
