package cpp

import (
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/signature"
)

// The lines a C/C++ build and test run prints that say what failed.
var (
	// gcc's and clang's errors: "src/a.c:3:5: error: 'x' undeclared".
	diagRe = regexp.MustCompile(`^(\S.*?):(\d+):(?:\d+:)? (?:fatal )?error: (.+)$`)
	// The source line and caret gcc prints under a diagnostic.
	diagContextRe = regexp.MustCompile(`^\s*\d* \| `)
	// The linker's: "a.c:2: undefined reference to `f'", "ld: cannot find -lm".
	linkRe = regexp.MustCompile("(?:undefined reference to|multiple definition of) .+$|\\bld(?:\\.\\w+)?: cannot find .+$|\\bld returned \\d+ exit status")
	// CMake's configure errors: "CMake Error at CMakeLists.txt:4 (add_executable):".
	cmakeErrRe = regexp.MustCompile(`^CMake Error(?: at (\S+):(\d+) \((\w+)\))?:\s*(.*)$`)
	// ctest's line for each test: "1/3 Test #1: Calc.Adds ....***Failed  0.01 sec".
	ctestStatusRe = regexp.MustCompile(`^\s*\d+/\d+ Test\s+#\d+: (.+?) \.+\s*(.*?)\s+[\d.]+ sec$`)
	ctestStartRe  = regexp.MustCompile(`^\s+Start\s+\d+: `)
	// ctest's summary of the failed: "  1 - Calc.Adds (Failed)".
	ctestFailedRe = regexp.MustCompile(`^\s+\d+ - (.+) \(([^()]+)\)$`)
	// assert(3): "prog: file.c:8: main: Assertion `x == 9' failed."
	assertRe = regexp.MustCompile("Assertion [`'‘](.*)['’] failed\\.$")
	// An exception nothing caught, and the what() line after it.
	terminateRe = regexp.MustCompile(`^terminate called after throwing an instance of ['‘](.+)['’]$`)
	whatRe      = regexp.MustCompile(`^\s*what\(\):\s*(.*)$`)
	// A process killed by a signal, as ctest and make report it.
	crashRe = regexp.MustCompile(`\*\*\*Exception: (SegFault|Bus error|Illegal|Numerical|Other|Child aborted)|\] (Segmentation fault|Bus error|Illegal instruction|Floating point exception|Killed)`)
	// GoogleTest: "[  FAILED  ] Suite.Name (0 ms)" and "file:3: Failure".
	gtestFailedRe  = regexp.MustCompile(`^\[  FAILED  \] ([A-Za-z_][\w/]*\.[\w/]+)`)
	gtestFailureRe = regexp.MustCompile(`^\S.*:\d+: Failure$`)
	// Catch2: "file:4: FAILED:", then the assertion, "with expansion:".
	catchFailedRe = regexp.MustCompile(`^\S.*:\d+: FAILED:$`)
	// make's own error line: "make: *** [Makefile:9: test] Error 1".
	makeErrRe = regexp.MustCompile(`^g?make(?:\[\d+\])?: \*\*\* (.+)$`)
	// A call in an assertion names user code: "add(" becomes "<id>(".
	callRe = regexp.MustCompile(`\b[A-Za-z_]\w*\(`)
)

// failing names the failing tests: ctest's summary (a GoogleTest test
// discovered by gtest_discover_tests has the same name in both) and
// GoogleTest's own, for a test program run without ctest.
var failing = []*regexp.Regexp{
	regexp.MustCompile(`(?m)^\s+\d+ - (.+) \([^()]+\)\s*$`),
	regexp.MustCompile(`(?m)^\[  FAILED  \] ([A-Za-z_][\w/]*\.[\w/]+)`),
}

// block is a key line with the lines that explain it; its kind says
// which lines those are.
type block struct {
	kind blockKind
	head string
	body []string
}

type blockKind int

const (
	cmakeBlock     blockKind = iota // CMake's indented message
	diagBlock                       // gcc's source line and caret
	terminateBlock                  // the exception's what()
	gtestBlock                      // GoogleTest's message, up to the test's result
	catchBlock                      // Catch2's assertion, up to its separator
)

func (b block) lines() []string { return append([]string{b.head}, b.body...) }

// testRun is one test as ctest ran it: its status line and its output.
type testRun struct {
	name, status string
	line         string
	output       []string
}

func (t testRun) failed() bool { return !strings.HasPrefix(t.status, "Passed") }

// report is what a run's output says, by kind of line.
type report struct {
	cmake      []block
	diags      []block
	links      []string
	crashes    []string
	terminates []block
	asserts    []string
	gtest      []block // each "file:line: Failure" with its message
	gtestNames []string
	catch      []block // each "file:line: FAILED:" with its assertion
	tests      []testRun
	summary    []string // ctest's "The following tests FAILED:" list
	makeErrs   []string
}

// read sorts an output's lines into a report.
func read(lines []string) report {
	var r report
	var open *block   // the block that the next lines explain
	var test *testRun // the ctest test whose output is being read
	inSummary := false
	for _, l := range lines {
		switch m := ctestStatusRe.FindStringSubmatch(l); {
		case m != nil:
			r.tests = append(r.tests, testRun{name: m[1], status: m[2], line: l})
			test = &r.tests[len(r.tests)-1]
			open = nil
			if crashRe.MatchString(l) {
				r.crashes = append(r.crashes, l)
			}
			continue
		case ctestStartRe.MatchString(l) || strings.Contains(l, "% tests passed"):
			test = nil
		case test != nil && strings.TrimSpace(l) != "":
			test.output = append(test.output, l)
		}
		if strings.HasPrefix(l, "The following tests FAILED:") {
			inSummary, open = true, nil
			r.summary = append(r.summary, l)
			continue
		}
		if open != nil && continues(open, l) {
			open.body = append(open.body, l)
			continue
		}
		open = nil
		if inSummary {
			if ctestFailedRe.MatchString(l) {
				r.summary = append(r.summary, l)
				continue
			}
			inSummary = false
		}
		open = r.add(l)
	}
	return r
}

// maxBlockLines bounds a test framework's message: an assertion on a long
// container prints it whole.
const maxBlockLines = 12

// continues reports a line that belongs to the open block.
func continues(b *block, l string) bool {
	switch b.kind {
	case cmakeBlock:
		return l == "" || strings.HasPrefix(l, " ")
	case diagBlock:
		return diagContextRe.MatchString(l)
	case terminateBlock:
		return whatRe.MatchString(l) && len(b.body) == 0
	case gtestBlock:
		return l != "" && !strings.HasPrefix(l, "[") && len(b.body) < maxBlockLines
	case catchBlock:
		return l != "" && !strings.HasPrefix(l, "===") && !strings.HasPrefix(l, "---") && len(b.body) < maxBlockLines
	}
	return false
}

// add files one line that is not part of an open block, and returns the
// block it opens, if any.
func (r *report) add(l string) *block {
	open := func(list *[]block, kind blockKind) *block {
		*list = append(*list, block{kind: kind, head: l})
		return &(*list)[len(*list)-1]
	}
	switch {
	case cmakeErrRe.MatchString(l):
		return open(&r.cmake, cmakeBlock)
	case strings.Contains(l, "error: ") && diagRe.MatchString(l):
		return open(&r.diags, diagBlock)
	case linkRe.MatchString(l):
		r.links = append(r.links, l)
	case crashRe.MatchString(l):
		r.crashes = append(r.crashes, l)
	case terminateRe.MatchString(l):
		return open(&r.terminates, terminateBlock)
	case assertRe.MatchString(l):
		r.asserts = append(r.asserts, l)
	case gtestFailureRe.MatchString(l):
		return open(&r.gtest, gtestBlock)
	case gtestFailedRe.MatchString(l):
		if m := gtestFailedRe.FindStringSubmatch(l); !slices.Contains(r.gtestNames, m[1]) {
			r.gtestNames = append(r.gtestNames, m[1])
		}
	case catchFailedRe.MatchString(l):
		return open(&r.catch, catchBlock)
	case makeErrRe.MatchString(l):
		r.makeErrs = append(r.makeErrs, l)
	}
	return nil
}

// Parse reads a C/C++ build and test run. What stopped the build outranks
// what failed in the tests: CMake's configure errors, then compiler
// errors, then the linker's. Among test failures a crash outranks an
// uncaught exception, an assert(), then a test framework's failed
// assertion; ctest's summary and make's error line are the last resort.
func Parse(lines []string) lang.Finding {
	r := read(lines)
	switch {
	case len(r.cmake) > 0:
		return r.cmakeFinding()
	case len(r.diags) > 0:
		return r.diagFinding()
	case len(r.links) > 0:
		return r.linkFinding()
	case len(r.crashes) > 0:
		return r.crashFinding()
	case len(r.terminates) > 0:
		b := r.terminates[0]
		typ := terminateRe.FindStringSubmatch(b.head)[1]
		shape := typ
		if len(b.body) > 0 {
			shape += ": " + signature.NormLine(asciiQuotes(whatRe.FindStringSubmatch(b.body[0])[1]))
		}
		return lang.Finding{Kind: "cpp:uncaught", Shape: shape, Keys: append(b.lines(), r.failedTests()...)}
	case len(r.asserts) > 0:
		expr := assertRe.FindStringSubmatch(r.asserts[0])[1]
		return lang.Finding{Kind: "cpp:assert", Shape: "Assertion " + normExpr(expr) + " failed", Keys: append(r.asserts, r.failedTests()...)}
	case len(r.gtest) > 0:
		return r.gtestFinding()
	case len(r.catch) > 0:
		b := r.catch[0]
		shape := signature.NormLine(b.head)
		if len(b.body) > 0 {
			shape = normAssertion(b.body[0])
		}
		return lang.Finding{Kind: "catch2:test-fail", Shape: shape, Keys: append(b.lines(), r.failedTests()...)}
	case len(r.summary) > 1:
		return r.ctestFinding()
	case len(r.makeErrs) > 0:
		return lang.Finding{Kind: "make:error", Shape: signature.NormLine(makeErrRe.FindStringSubmatch(r.makeErrs[0])[1]), Keys: r.makeErrs}
	}
	return lang.Finding{}
}

// cmakeFinding: the command that failed and the first line of its message.
func (r report) cmakeFinding() lang.Finding {
	b := r.cmake[0]
	m := cmakeErrRe.FindStringSubmatch(b.head)
	msg := m[4]
	for _, l := range b.body {
		if msg != "" {
			break
		}
		msg = strings.TrimSpace(l)
	}
	shape := signature.NormLine(asciiQuotes(msg))
	if m[3] != "" {
		shape = m[3] + ": " + shape
	}
	var keys []string
	for _, b := range r.cmake {
		keys = append(keys, b.head)
		keys = append(keys, trimmed(b.body, 2)...)
	}
	return lang.Finding{Kind: "cmake:error", Shape: shape, Keys: keys}
}

// diagFinding: the first compiler error's message, without its place.
func (r report) diagFinding() lang.Finding {
	var keys []string
	for _, b := range r.diags {
		keys = append(keys, b.head)
	}
	msg := diagRe.FindStringSubmatch(r.diags[0].head)[3]
	return lang.Finding{Kind: "cpp:error", Shape: signature.NormLine(asciiQuotes(msg)), Keys: keys}
}

// linkFinding: the first undefined or duplicate symbol, or the linker's
// own complaint.
func (r report) linkFinding() lang.Finding {
	msg := linkRe.FindString(r.links[0])
	return lang.Finding{Kind: "cpp:link", Shape: signature.NormLine(asciiQuotes(msg)), Keys: r.links}
}

// crashFinding: the signal; a segmentation fault is the common one.
func (r report) crashFinding() lang.Finding {
	m := crashRe.FindStringSubmatch(r.crashes[0])
	sig := m[1] + m[2]
	kind := "cpp:crash"
	if sig == "SegFault" || sig == "Segmentation fault" {
		kind, sig = "cpp:segfault", "Segmentation fault"
	}
	return lang.Finding{Kind: kind, Shape: sig, Keys: append(r.crashes, r.failedTests()...)}
}

// gtestFinding: the first failed assertion's message and its first
// operand, with the calls in it abstracted.
func (r report) gtestFinding() lang.Finding {
	b := r.gtest[0]
	shape := "Failure"
	if len(b.body) > 0 {
		shape = signature.NormLine(asciiQuotes(b.body[0]))
	}
	if len(b.body) > 1 {
		shape += " " + normExpr(b.body[1])
	}
	var keys []string
	for _, n := range r.gtestNames {
		keys = append(keys, "[  FAILED  ] "+n)
	}
	return lang.Finding{Kind: "gtest:test-fail", Shape: shape, Keys: append(keys, b.lines()...)}
}

// ctestFinding: a test that failed without a message the parser knows;
// the first line it printed, or ctest's word for how it ended.
func (r report) ctestFinding() lang.Finding {
	m := ctestFailedRe.FindStringSubmatch(r.summary[1])
	shape := "test " + signature.NormLine("("+m[2]+")")
	for _, t := range r.tests {
		if t.name == m[1] && len(t.output) > 0 {
			shape += ": " + signature.NormLine(asciiQuotes(t.output[0]))
			break
		}
	}
	return lang.Finding{Kind: "ctest:test-fail", Shape: shape, Keys: append(r.summary[1:], r.failedOutput(4)...)}
}

// failedTests are the ctest summary's lines, without its heading.
func (r report) failedTests() []string {
	if len(r.summary) < 2 {
		return nil
	}
	return r.summary[1:]
}

// failedOutput is up to n output lines of each failed test.
func (r report) failedOutput(n int) []string {
	var out []string
	for _, t := range r.tests {
		if t.failed() {
			out = append(out, trimmed(t.output, n)...)
		}
	}
	return out
}

// normExpr is an assertion's expression normalized, with the calls in it
// abstracted: they name user code.
func normExpr(s string) string {
	return signature.NormLine(callRe.ReplaceAllString(signature.NormLine(asciiQuotes(s)), "<id>("))
}

// catchAssertRe is Catch2's assertion as it prints it: "REQUIRE( x == 1 )".
var catchAssertRe = regexp.MustCompile(`^\s*([A-Z_]+)\( (.*) \)$`)

// normAssertion is a Catch2 assertion normalized; its macro, which says
// what kind of check failed, is kept.
func normAssertion(s string) string {
	if m := catchAssertRe.FindStringSubmatch(s); m != nil {
		return m[1] + "( " + normExpr(m[2]) + " )"
	}
	return normExpr(s)
}

// asciiQuotes turns the typographic and backtick quotes of gcc, ld and
// glibc into plain ones, which signature.NormLine knows.
var asciiQuotes = strings.NewReplacer("‘", "'", "’", "'", "`", "'").Replace

// trimmed is the first n non-blank lines of ls.
func trimmed(ls []string, n int) []string {
	var out []string
	for _, l := range ls {
		if strings.TrimSpace(l) != "" && len(out) < n {
			out = append(out, l)
		}
	}
	return out
}

// Digest limits: a digest fits the 4000 bytes an output is cut to, with
// room for the tail that follows it.
const (
	digestBytes     = 3000
	maxDiags        = 10
	maxTestLines    = 15
	maxContextLines = 6
	maxSummaryLines = 30
)

// noiseRe are the framework lines in a test's output that say nothing of
// its failure: GoogleTest's and Catch2's banners, rules and counts.
var noiseRe = regexp.MustCompile(`^(?:\[(?:==========|----------| RUN      |       OK |  PASSED  )\]|\[  FAILED  \] \S+ \(\d+ ms\)$|\[  FAILED  \] \d+ tests?, listed below|\s*\d+ FAILED TESTS?$|Running main\(\) from|Note: Google Test filter|Filters: |~{10}|.* is a Catch v[\d.]+ host application|Run with -\? for options|[-=.]{10}|test cases: |assertions: )`)

// Digest picks what a person or the model needs from a long run: CMake's
// errors, the compiler's with their source lines, the linker's, then
// each failed test with its own output, and ctest's list of the failed.
// Without ctest, the crash, assert and framework lines stand for the
// tests. It is "" when the output holds none of these.
func Digest(output string) string {
	r := read(strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n"))
	// ctest's list of the failed comes last, and room is kept for it.
	summary := trimmed(r.summary, maxSummaryLines)
	d := digest{limit: digestBytes - min(len(strings.Join(summary, "\n"))+1, digestBytes/3)}
	for _, b := range r.cmake {
		d.add(b.head)
		d.add(trimmed(b.body, maxContextLines)...)
	}
	for _, b := range r.diags[:min(len(r.diags), maxDiags)] {
		d.add(b.lines()...)
	}
	d.add(r.links[:min(len(r.links), maxDiags)]...)
	ran := false
	for _, t := range r.tests {
		if t.failed() {
			ran = true
			d.add(t.line)
			d.add(quiet(t.output, maxTestLines)...)
		}
	}
	if !ran {
		d.add(r.crashes...)
		for _, b := range r.terminates {
			d.add(b.lines()...)
		}
		d.add(r.asserts...)
		for _, b := range append(r.gtest, r.catch...) {
			d.add(b.lines()...)
		}
		for _, n := range r.gtestNames {
			d.add("[  FAILED  ] " + n)
		}
	}
	d.limit, d.full = digestBytes, false
	d.add(summary...)
	if d.empty() {
		d.add(r.makeErrs...)
	}
	return d.String()
}

// quiet is up to n lines of a test's output, without framework noise.
func quiet(ls []string, n int) []string {
	var out []string
	for _, l := range ls {
		if !noiseRe.MatchString(l) && len(out) < n {
			out = append(out, l)
		}
	}
	return out
}

// digest gathers lines up to limit bytes; a line that does not fit ends it.
type digest struct {
	b     strings.Builder
	limit int
	full  bool
}

func (d *digest) add(lines ...string) {
	for _, l := range lines {
		if d.full || d.b.Len()+len(l)+1 > d.limit {
			d.full = true
			return
		}
		d.b.WriteString(l)
		d.b.WriteByte('\n')
	}
}

func (d *digest) empty() bool { return d.b.Len() == 0 }

func (d *digest) String() string { return strings.TrimSuffix(d.b.String(), "\n") }
