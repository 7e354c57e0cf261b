package integrity

import (
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
	Failed []string `json:"failed,omitempty"`
}

var (
	pytestSummary = regexp.MustCompile(`(?m)^=+ short test summary info =+$`)
	pytestResult  = regexp.MustCompile(`(?m)^(PASSED|FAILED|ERROR) (\S+)`)
	goRun         = regexp.MustCompile(`(?m)^=== RUN\s`)
	goResult      = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL): (\S+)`)
)

// ParseRan reads the tests a run reported: pytest's -rfEp summary or go
// test -v's results.
func ParseRan(output string) Ran {
	var r Ran
	add := func(status, id string) {
		switch status {
		case "PASSED", "PASS":
			r.Passed = append(r.Passed, id)
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
	return r
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
