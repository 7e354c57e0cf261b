// Package cpp is autocoder's knowledge of C and C++: one language serves
// both, as one CMake project often holds both. Tests are built with CMake
// out of the project's tree and run by ctest; GoogleTest and Catch2 come
// from Debian, in the image and on a host with the bwrap backend.
package cpp

import (
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/policy"
)

// buildDir is where CMake builds, outside the project: the build's files
// never become part of a snapshot, and /tmp is writable in both backends.
const buildDir = "/tmp/build"

// The steps of a CMake test run. The configure step logs warnings and
// errors only, so compiler and test output is what a failing run shows.
// --no-tests=error: a project that registers no test fails rather than
// passing on nothing.
const (
	configure = "cmake -S . -B " + buildDir + " -DCMAKE_BUILD_TYPE=Debug --log-level=WARNING"
	build     = "cmake --build " + buildDir + " -j2"
	ctest     = "ctest --test-dir " + buildDir + " --output-on-failure --no-tests=error"
)

// noBuild is what a project with neither CMake nor make is told.
const noBuild = `echo "no CMakeLists.txt or Makefile at the project's root: nothing builds the tests" >&2; exit 2`

// script runs cmakeSteps in a CMake project, else makeSteps in a project
// with a Makefile, else fails. CMake wins when both are there: a Makefile
// next to CMakeLists.txt is usually a convenience wrapper around it.
// stderr joins stdout first, so each compiler error stays next to the
// build step that printed it.
func script(cmakeSteps, makeSteps string) string {
	return "exec 2>&1\n" +
		"if [ -f CMakeLists.txt ]; then\n  " + cmakeSteps + "\n" +
		"elif [ -f Makefile ] || [ -f makefile ] || [ -f GNUmakefile ]; then\n  " + makeSteps + "\n" +
		"else\n  " + noBuild + "\nfi"
}

var (
	// testCmd builds everything and runs every test: ctest, or `make test`.
	testCmd = []string{"sh", "-c", script(configure+" && "+build+" && "+ctest, "make test")}
	// compileCmd builds the code and its tests: CMake's default target,
	// or make's, which a Makefile with a test target builds the tests by.
	compileCmd = []string{"sh", "-c", script(configure+" && "+build, "make")}
)

// Language returns C/C++.
func Language() lang.Language {
	return lang.Language{
		Name:    "cpp",
		Title:   "C/C++",
		Aliases: []string{"c", "c++", "cxx"},
		Detect: lang.Detect{
			// A Makefile is no marker: projects in every language have
			// one. A Makefile-only C project is found by its test command
			// (make, gcc) or the task's words.
			Markers:  []string{"CMakeLists.txt"},
			Commands: []string{"cmake", "ctest", "make", "gcc", "g++", "cc", "c++", "clang", "clang++"},
			Task:     `\bc\+\+|\bcpp\b|\bin c\b|\bc program\b|\bcmake\b`,
		},
		Tests: lang.Tests{
			Command:    testCmd,
			Describe:   "CMake, then `ctest` (GoogleTest, Catch2 2 or plain `add_test`); without CMake, `make test`",
			Named:      named,
			Compile:    compileCmd,
			IsTestFile: isTestFile,
		},
		Guide:      guide,
		Extensions: policy.C.Extensions,
		Failure: lang.Failure{
			Parse:   Parse,
			Digest:  Digest,
			Failing: failing,
		},
		Policy: lang.Policy{LineRules: policy.C},
		Sandbox: lang.Sandbox{
			Image: "autocoder/sandbox-cpp:1",
			Env: map[string]string{
				// For the builds and test runs the model starts itself.
				"CTEST_OUTPUT_ON_FAILURE":    "1",
				"CMAKE_BUILD_PARALLEL_LEVEL": "2",
			},
			Recipe: lang.Recipe{
				// The official image's GCC lives in /usr/local; Debian's
				// CMake, GoogleTest and Catch2 complete it. No recommends:
				// they would add Debian's own GCC beside it.
				Base:      "gcc:12-bookworm",
				BaseSetup: "apt-get update && apt-get install -y --no-install-recommends cmake make libgtest-dev libgmock-dev catch2 && rm -rf /var/lib/apt/lists/*",
				Packages:  []string{"gcc", "g++", "libc6-dev", "make", "cmake", "libgtest-dev", "libgmock-dev", "catch2"},
			},
			// Headers are read by every compile; CMake's modules under
			// /usr/share are read once per configure and stay in the
			// image's layer.
			ToolchainDirs: append(slices.Clone(lang.DebianToolchainDirs), "/usr/include"),
			// A GoogleTest project: it loads the compilers, CMake's
			// modules and GoogleTest's package. It builds in the prewarm
			// directory, never in buildDir, which a run's configure would
			// find holding another project's cache.
			Prewarm: `printf 'cmake_minimum_required(VERSION 3.16)\nproject(w CXX)\nfind_package(GTest REQUIRED)\nenable_testing()\nadd_executable(w w.cpp)\ntarget_link_libraries(w GTest::gtest_main)\nadd_test(NAME w COMMAND w)\n' > CMakeLists.txt && ` +
				`printf '#include <gtest/gtest.h>\nTEST(W, W) {}\n' > w.cpp && ` +
				`cmake -S . -B build --log-level=WARNING && cmake --build build && ctest --test-dir build`,
			HostCheck: []string{"sh", "-c", "cmake --version && ctest --version && cc --version && c++ --version && make --version" +
				" && ls /usr/lib/*/cmake/GTest/GTestConfig.cmake /usr/lib/cmake/Catch2/Catch2Config.cmake"},
			Install: "apt-get install gcc g++ make cmake libgtest-dev libgmock-dev catch2",
		},
	}
}

const guide = `Language: C and C++ (GCC 12, C17 and C++17 by default), built with CMake 3.25.
Keep or create CMakeLists.txt at the project's root (cmake_minimum_required(VERSION 3.16), project(), enable_testing()).
The tests run as: cmake -S . -B /tmp/build && cmake --build /tmp/build && ctest --test-dir /tmp/build. Build only in /tmp/build, never inside the project.
There is no network: no FetchContent, ExternalProject or downloads. Use the standard libraries and what is installed:
- GoogleTest 1.12: find_package(GTest REQUIRED), #include <gtest/gtest.h>, target_link_libraries(t PRIVATE GTest::gtest_main) (GTest::gmock for GoogleMock), include(GoogleTest), gtest_discover_tests(t).
- Catch2 2.13 (not v3): find_package(Catch2 2 REQUIRED), #include <catch2/catch.hpp>, target_link_libraries(t PRIVATE Catch2::Catch2WithMain), include(Catch), catch_discover_tests(t).
- Or plain test programs that assert() and return non-zero on failure, each registered with add_test(NAME name COMMAND program).
Put tests under tests/ or in files named *_test.c / *_test.cpp. A test's name is its ctest name (Suite.Name for GoogleTest, the TEST_CASE's name for Catch2).
A project without CMakeLists.txt is built and tested by its Makefile: make test.`

// named runs the named ctest tests, after building everything: ctest's
// -R takes a regular expression, so each name is quoted and anchored. The
// expression reaches ctest as a positional parameter of the script, never
// through the shell's parser. A Makefile project cannot select tests and
// runs them all.
func named(tests []string) ([]string, error) {
	if len(tests) == 0 {
		return slices.Clone(compileCmd), nil
	}
	quoted := make([]string, len(tests))
	for i, t := range tests {
		quoted[i] = regexp.QuoteMeta(t)
	}
	expr := "^(" + strings.Join(quoted, "|") + ")$"
	return []string{"sh", "-c", script(configure+" && "+build+" && "+ctest+` -R "$1"`, "make test"), "sh", expr}, nil
}

// sourceExts are the C and C++ source file endings tests are written in.
var sourceExts = []string{".c", ".cc", ".cpp", ".cxx", ".c++"}

// isTestFile is the usual naming of C and C++ tests: test_x.c,
// x_test.cpp, x_tests.cc, x_unittest.cc; files under tests/ and test/
// belong to the tests, their own CMakeLists.txt included.
func isTestFile(p string) bool {
	if lang.UnderTestDir(p) {
		return true
	}
	base := path.Base(p)
	ext := path.Ext(base)
	if !slices.Contains(sourceExts, ext) {
		return false
	}
	stem := strings.TrimSuffix(base, ext)
	return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") ||
		strings.HasSuffix(stem, "_tests") || strings.HasSuffix(stem, "_unittest")
}
