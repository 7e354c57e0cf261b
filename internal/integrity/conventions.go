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
	case "conftest.py", "pytest.ini", ".pytest.ini":
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

var (
	// Command-line options in configuration that leave tests out.
	deselectOpt = regexp.MustCompile(`(?:^|[\s"'=\[,])(-k|-m|--deselect|--ignore(?:-glob)?|--co|--collect-only|--noconftest|-p\s*no:\S+|--lf|--last-failed|--sw|--stepwise)(?:$|[\s"'=\],])`)
	// Settings that change which files and functions pytest collects.
	collectKey = regexp.MustCompile(`(?m)^\s*(testpaths|python_files|python_functions|python_classes|norecursedirs|collect_ignore(?:_glob)?)\s*[=:]`)
	// Hooks and calls in Python that skip or leave out tests.
	pySkips    = regexp.MustCompile(`\b(pytest_collection_modifyitems|pytest_ignore_collect|pytest_collect_file|pytest_pycollect_makeitem|pytest_runtest_setup|pytest_runtest_call|pytest_runtest_protocol|pytest_plugins|collect_ignore(?:_glob)?|deselect\w*|skip\w*|xfail|SkipTest)\b`)
	goTestMain = regexp.MustCompile(`(?m)^func\s+TestMain\s*\(`)
)

// configSelects says how a new or changed file would skip or leave out
// tests, or "" when it would not.
func configSelects(p string, data []byte) string {
	base := path.Base(p)
	switch {
	case base == "conftest.py" || base == "sitecustomize.py" || base == "usercustomize.py":
		if m := pySkips.Find(data); m != nil {
			return "uses " + string(m) + ", which can skip or leave out tests"
		}
		if base != "conftest.py" {
			return base + " runs in every Python process, pytest included"
		}
	case strings.HasSuffix(base, ".pth"):
		return base + " runs in every Python process, pytest included"
	case isPytestConfig(p, data):
		if m := deselectOpt.FindSubmatch(data); m != nil {
			return "passes " + strings.Join(strings.Fields(string(m[1])), " ") + " to pytest"
		}
		if m := collectKey.FindSubmatch(data); m != nil {
			return "sets " + string(m[1])
		}
	case strings.HasSuffix(base, "_test.go"):
		if goTestMain.Match(data) {
			return "adds TestMain, which decides whether the user's tests run"
		}
	}
	return ""
}
