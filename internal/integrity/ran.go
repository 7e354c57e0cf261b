package integrity

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// ReportCommand wraps a test command so that the runners the languages use
// list every test they ran, passed or not: pytest with -rfEp (failures,
// errors and passes), go test with -v.
// The judge compares these lists with the originals' (Ran.Missing).
func ReportCommand(cmd []string) []string {
	const script = `export PYTEST_ADDOPTS="-rfEp ${PYTEST_ADDOPTS:-}" GOFLAGS="-v ${GOFLAGS:-}"; exec "$@"`
	return append([]string{"sh", "-c", script, "sh"}, cmd...)
}

// Ran is what a test run reported about its tests.
type Ran struct {
	// Known is set when a runner reported its tests one by one.
	Known  bool     `json:"known"`
	Passed []string `json:"passed,omitempty"`
	// Failed are the tests that ran and failed, or could not be collected.
	Failed  []string `json:"failed,omitempty"`
	Skipped []string `json:"skipped,omitempty"` // by go test
	// Packages are the Go packages go test reported on (ok or FAIL).
	Packages []string `json:"packages,omitempty"`
}

var (
	pytestSummary = regexp.MustCompile(`(?m)^=+ short test summary info =+$`)
	pytestResult  = regexp.MustCompile(`(?m)^(PASSED|FAILED|ERROR) (\S+)`)
	goRun         = regexp.MustCompile(`(?m)^=== RUN\s`)
	goResult      = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+)`)
	goPackage     = regexp.MustCompile(`(?m)^(?:ok|FAIL)[ \t]+(\S+)`)
)

// ParseRan reads the tests a run reported: pytest's -rfEp summary or go
// test -v's results.
func ParseRan(output string) Ran {
	var r Ran
	add := func(status, id string) {
		switch status {
		case "PASSED", "PASS":
			r.Passed = append(r.Passed, id)
		case "SKIP":
			r.Skipped = append(r.Skipped, id)
		default:
			r.Failed = append(r.Failed, id)
		}
	}
	if loc := pytestSummary.FindStringIndex(output); loc != nil {
		r.Known = true
		for _, m := range pytestResult.FindAllStringSubmatch(output[loc[1]:], -1) {
			add(m[1], m[2])
		}
	}
	if goRun.MatchString(output) {
		r.Known = true
		for _, m := range goResult.FindAllStringSubmatch(output, -1) {
			add(m[1], m[2])
		}
	}
	for _, m := range goPackage.FindAllStringSubmatch(output, -1) {
		r.Packages = append(r.Packages, m[1])
	}
	return r
}

var (
	goBuildTag = regexp.MustCompile(`(?m)^//go:build `)
	goModule   = regexp.MustCompile(`(?m)^module\s+(\S+)`)
)

// UnreportedGoTests lists the user's Go tests that a go test -v run did
// not report although it reported on their package: the test binary
// ended before running them (os.Exit in an init, say). Files with build
// constraints are left out, as are runs that select tests (-run, -skip).
func (s Set) UnreportedGoTests(cmd string, r Ran) []string {
	if strings.Contains(cmd, "-run") || strings.Contains(cmd, "-skip") {
		return nil
	}
	var out []string
	for _, p := range s.protected {
		data := s.input[p].Data
		if !strings.HasSuffix(p, "_test.go") || goBuildTag.Match(data) {
			continue
		}
		pkg, ok := s.goImportPath(path.Dir(p))
		if !ok || !slices.Contains(r.Packages, pkg) {
			continue
		}
		for _, name := range testNames(p, data) {
			reported := slices.Contains(r.Passed, name) || slices.Contains(r.Failed, name) || slices.Contains(r.Skipped, name)
			if strings.HasPrefix(name, "Test") && name != "TestMain" && !reported {
				out = append(out, name)
			}
		}
	}
	return out
}

// goImportPath is the import path of a directory, by the nearest go.mod
// above it in the starting workspace.
func (s Set) goImportPath(dir string) (string, bool) {
	for d := dir; ; d = path.Dir(d) {
		if mod, ok := s.input[path.Join(d, "go.mod")]; ok {
			m := goModule.FindSubmatch(mod.Data)
			if m == nil {
				return "", false
			}
			if d == dir {
				return string(m[1]), true
			}
			return string(m[1]) + "/" + strings.TrimPrefix(dir, d+"/"), true
		}
		if d == "." {
			return "", false
		}
	}
}

// Missing lists the tests the originals' run ran that a run did not pass.
// A file the originals could not collect counts as passed by any test of
// it that passed.
func (orig Ran) Missing(run Ran) []string {
	var out []string
	for _, id := range append(slices.Clip(orig.Passed), orig.Failed...) {
		passed := slices.ContainsFunc(run.Passed, func(p string) bool {
			return p == id || strings.HasPrefix(p, id+"::")
		})
		if !passed && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
