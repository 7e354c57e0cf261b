package integrity

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Kinds of finding.
const (
	KindChanged  = "changed"   // a protected file's content changed
	KindDeleted  = "deleted"   // a protected file is gone
	KindRenamed  = "renamed"   // a test function of the user's has a new name
	KindRemoved  = "removed"   // test functions of the user's are gone
	KindSkipped  = "skipped"   // a skip or expected failure was added to a user's test
	KindConfig   = "config"    // new or changed configuration skips or deselects tests
	KindFewerRun = "fewer-run" // fewer tests ran than the originals run
	// KindUnreadable: a run passed but its report of the tests it ran
	// could not be read, so nothing says the user's tests ran.
	KindUnreadable = "unreadable"
)

// Finding is one way an attempt touched the user's tests.
type Finding struct {
	Kind   string `json:"kind"`
	Path   string `json:"path,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// String describes the finding for a person.
func (f Finding) String() string {
	var what string
	switch f.Kind {
	case KindDeleted:
		what = "deleted the user's test file"
	case KindRenamed:
		what = "renamed a test in the user's test file"
	case KindRemoved:
		what = "removed tests from the user's test file"
	case KindSkipped:
		what = "made the user's tests skip in"
	case KindConfig:
		return "added or changed " + f.Path + ", which decides how the user's tests run (" + f.Detail + ")"
	case KindFewerRun:
		return "fewer tests ran than in the user's original tests (" + f.Detail + ")"
	case KindUnreadable:
		return "the test report could not be read: " + f.Detail
	default:
		what = "changed the user's test file"
	}
	s := what + " " + f.Path
	if f.Detail != "" && f.Kind != KindFewerRun {
		s += " (" + f.Detail + ")"
	}
	return s
}

// Instruction tells the model what to do about the finding.
func (f Finding) Instruction() string {
	switch f.Kind {
	case KindConfig:
		return "You " + f.String() + "; the judge runs without it: undo it and fix the code, or ask for --allow-test-edits if the task is about the tests."
	case KindFewerRun:
		return "Fewer tests ran than in the user's original tests (" + f.Detail + "); do not skip, deselect or cut short the user's tests: fix the code."
	case KindUnreadable:
		return "The test report could not be read (" + f.Detail + "), so nothing shows the user's tests ran; do not flood or silence the test output: fix the code."
	default:
		return "You " + f.String() + "; it is put back as it was: leave it so and fix the code instead."
	}
}

// Report is the findings as a block for test output and prompts.
func Report(findings []Finding) string {
	if len(findings) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Test integrity: the user's tests decide success and were run as they were at the start.\n")
	for _, f := range findings {
		b.WriteString("- " + f.Instruction() + "\n")
	}
	return b.String()
}

var (
	pyTestName = regexp.MustCompile(`(?m)^\s*(?:async\s+)?def\s+(test\w*)\s*\(|^\s*class\s+(Test\w*)`)
	goTestName = regexp.MustCompile(`(?m)^func\s+(?:\([^)]*\)\s*)?((?:Test|Benchmark|Fuzz|Example)\w*)\s*\(`)
	pyFuncName = regexp.MustCompile(`(?m)^\s*(?:async\s+)?def\s+(\w+)|^\s*class\s+(\w+)`)
	goFuncName = regexp.MustCompile(`(?m)^func\s+(?:\([^)]*\)\s*)?(\w+)\s*[\[(]`)
	skipCall   = regexp.MustCompile(`\bt\.Skip(?:f|Now)?\(|\bpytest\.(?:mark\.)?(?:skip|skipif|xfail)\b|\bunittest\.(?:skip\w*|expectedFailure)\b|\.(?:skip|only)\(|\bSkipTest\b`)
)

// testNames lists the test functions (and Python test classes) a file
// declares, in order.
func testNames(p string, data []byte) []string {
	if strings.HasSuffix(p, ".go") {
		return submatches(goTestName, data)
	}
	return submatches(pyTestName, data)
}

// funcNames lists every function (and Python class) a file declares.
func funcNames(p string, data []byte) []string {
	if strings.HasSuffix(p, ".go") {
		return submatches(goFuncName, data)
	}
	return submatches(pyFuncName, data)
}

func submatches(re *regexp.Regexp, data []byte) []string {
	var names []string
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		for _, g := range m[1:] {
			if g != "" {
				names = append(names, g)
			}
		}
	}
	return names
}

// compareTest describes how a protected file changed, most telling first.
func compareTest(p string, before, after []byte) Finding {
	was, now := testNames(p, before), testNames(p, after)
	gone := missing(was, now)
	added := missing(now, was)
	if len(gone) == 1 && len(added) == 0 {
		// Renamed out of the runner's sight: test_add → _test_add, TestAdd → testAdd.
		for _, n := range missing(funcNames(p, after), funcNames(p, before)) {
			if strings.Contains(strings.ToLower(n), strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(gone[0], "test_"), "Test"))) {
				added = append(added, n)
				break
			}
		}
	}
	switch {
	case len(gone) == 1 && len(added) == 1:
		return Finding{Kind: KindRenamed, Path: p, Detail: fmt.Sprintf("%s is now %s", gone[0], added[0])}
	case len(gone) > 0:
		return Finding{Kind: KindRemoved, Path: p, Detail: strings.Join(gone, ", ") + " gone"}
	case len(skipCall.FindAll(after, -1)) > len(skipCall.FindAll(before, -1)):
		return Finding{Kind: KindSkipped, Path: p, Detail: "adds a skip"}
	}
	return Finding{Kind: KindChanged, Path: p}
}

// missing lists the names of a that b lacks.
func missing(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
