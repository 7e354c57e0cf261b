package integrity

import (
	"bytes"
	"path"
	"regexp"
	"strings"
)

// testDirs are directories whose every file belongs to the tests: the
// tests themselves, their fixtures and data.
var testDirs = map[string]bool{"tests": true, "test": true, "testdata": true, "__tests__": true}

var jsTest = regexp.MustCompile(`\.(?:test|spec)\.[cm]?[jt]sx?$`)

// IsTestFile reports whether a path is a test file by the conventions of
// the languages autocoder knows: test_*.py, *_test.py, tests.py,
// *_test.go, *.test.ts and the like, or any file under tests/, test/,
// testdata/, __tests__/ or src/test/.
func IsTestFile(p string) bool {
	base := path.Base(p)
	switch {
	case strings.HasSuffix(base, "_test.go"),
		strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "tests.py"),
		jsTest.MatchString(base):
		return true
	}
	dirs := strings.Split(path.Dir(p), "/")
	for i, d := range dirs {
		if testDirs[d] || (d == "src" && i+1 < len(dirs) && dirs[i+1] == "test") {
			return true
		}
	}
	return false
}

// isTestConfig reports configuration that changes which tests run or how:
// conftest.py, pytest.ini, pytest sections of tox.ini, setup.cfg and
// pyproject.toml, jest and vitest configs, Cargo [[test]] entries,
// CTest files and the Maven surefire plugin.
func isTestConfig(p string, data []byte) bool {
	base := path.Base(p)
	switch {
	case isPytestConfig(p, data):
		return true
	case strings.HasPrefix(base, "jest.config.") || strings.HasPrefix(base, "vitest.config.") || base == "CTestTestfile.cmake":
		return true
	case base == "Cargo.toml":
		return bytes.Contains(data, []byte("[[test]]"))
	case base == "CMakeLists.txt":
		return bytes.Contains(data, []byte("add_test")) || bytes.Contains(data, []byte("enable_testing"))
	case base == "pom.xml":
		return bytes.Contains(data, []byte("surefire"))
	}
	return false
}

// isPytestConfig reports a file pytest reads its configuration from.
func isPytestConfig(p string, data []byte) bool {
	switch path.Base(p) {
	case "conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml":
		return true
	case "tox.ini":
		return bytes.Contains(data, []byte("[pytest]"))
	case "setup.cfg":
		return bytes.Contains(data, []byte("[tool:pytest]"))
	case "pyproject.toml":
		return bytes.Contains(data, []byte("[tool.pytest"))
	}
	return false
}

// runnerModules are the Python modules a test run imports before any test
// (pytest, its plugins and helpers, the hooks Python runs at start-up) and
// unittest: a module of that name in the project is imported in their place.
var runnerModules = map[string]bool{
	"pytest": true, "_pytest": true, "pluggy": true, "py": true, "iniconfig": true,
	"unittest": true, "sitecustomize": true, "usercustomize": true,
}

// configSelects says how a new or changed file would change which tests
// run or how, or "" when it would not. Any pytest configuration does: it
// can load plugins, hooks and paths that decide every outcome, so the
// user's configuration is the only one the judge runs with.
func configSelects(p string, data []byte) string {
	base := path.Base(p)
	switch {
	case isPytestConfig(p, data):
		return "test configuration is the user's"
	case strings.HasSuffix(base, ".pth"):
		return base + " runs in every Python process, pytest included"
	case strings.HasSuffix(base, ".pyc") || strings.HasSuffix(base, ".pyo"):
		return "compiled Python can be imported in place of the source"
	case strings.HasSuffix(base, ".go") && bytes.Contains(data, []byte("//go:linkname")):
		return "go:linkname reaches into other packages, the testing package included"
	case isPackageMetadata(p):
		// Entry points there load pytest plugins from the project.
		return "it declares an installed package, whose entry points pytest loads as plugins"
	case shadowsRunner(p):
		return "it stands in for a module the test runner imports"
	case strings.HasSuffix(base, "_test.go"):
		return goTestHooks(p, data)
	}
	return ""
}

// isPackageMetadata reports a file of an installed Python package's
// metadata directory.
func isPackageMetadata(p string) bool {
	for _, part := range strings.Split(path.Dir(p), "/") {
		if strings.HasSuffix(part, ".dist-info") || strings.HasSuffix(part, ".egg-info") {
			return true
		}
	}
	return false
}

// shadowsRunner reports a Python file that, as a module or package of its
// own, takes the name of one the test runner imports.
func shadowsRunner(p string) bool {
	ext := path.Ext(p)
	if ext != ".py" && ext != ".pyc" && ext != ".so" && ext != ".pyd" {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		name, _, _ := strings.Cut(part, ".")
		if runnerModules[name] {
			return true
		}
	}
	return false
}
