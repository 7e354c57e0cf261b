package rust

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/signature"
)

// The lines of cargo's and rustc's output the reading is built on. Both
// panic formats are read: rustc before 1.73 quotes the message on the
// panic line ("panicked at 'msg', src/lib.rs:3:5"), later ones put the
// location there and the message on the lines after it.
var (
	errorRe     = regexp.MustCompile("^error(?:\\[(E\\d{4})\\])?: (.+)$")
	locationRe  = regexp.MustCompile(`^\s*--> (\S+:\d+:\d+)`)
	sectionRe   = regexp.MustCompile(`^---- (.+?) stdout ----$`)
	newPanicRe  = regexp.MustCompile(`^thread '([^']+)'(?: \(\d+\))? panicked at (\S+:\d+:\d+):$`)
	oldPanicRe  = regexp.MustCompile(`^thread '([^']+)'(?: \(\d+\))? panicked at '(.*)$`)
	oldPanicEnd = regexp.MustCompile(`^(.*)', (\S+:\d+:\d+)$`)
	overflowRe  = regexp.MustCompile(`^thread '([^']+)'(?: \(\d+\))? has overflowed its stack`)
	signalRe    = regexp.MustCompile(`process didn't exit successfully: .*\(signal: \d+, SIG\w+`)
	resultRe    = regexp.MustCompile(`^test result: FAILED\.`)
	// cargo's own summaries of errors already reported.
	summaryRe = regexp.MustCompile(`^(?:could not compile|(?:doc)?test failed, to rerun|\d+ targets? failed|aborting due to|build failed)`)
	// What a linker error's long note says that matters.
	linkDetailRe = regexp.MustCompile(`undefined reference to|undefined symbol|>>> referenced by|cannot find -l|multiple definition of`)
	// The end of what a panic says: a note, a backtrace, the next test.
	panicEndRe = regexp.MustCompile(`^(?:note: |stack backtrace:|---- |failures:$|test result: |error: |\s*$)`)
)

// codelessKinds classify an error without a rustc code by its message.
var codelessKinds = []struct {
	re   *regexp.Regexp
	kind string
}{
	{regexp.MustCompile(`^linking with`), "rust:link"},
	{regexp.MustCompile(`lock file`), "rust:lockfile"},
	{regexp.MustCompile(`manifest|Cargo\.toml`), "rust:manifest"},
	{regexp.MustCompile(`no matching package|as a dependency|failed to load source|--offline|failed to select a version`), "rust:dependency"},
	{regexp.MustCompile(`.`), "rust:compile"},
}

// panicKinds classify a panic by its message; a panic none matches is a
// failed assertion in a test and a plain panic elsewhere.
var panicKinds = []struct {
	re   *regexp.Regexp
	kind string
}{
	{regexp.MustCompile(`out of bounds|out of range for slice|byte index .* is out of range|is not a char boundary`), "rust:panic:index-out-of-bounds"},
	{regexp.MustCompile("^called `Option::unwrap\\(\\)` on a `None` value"), "rust:panic:unwrap-none"},
	{regexp.MustCompile("^called `Result::unwrap(?:_err)?\\(\\)` on an? `(?:Err|Ok)` value"), "rust:panic:unwrap-err"},
	{regexp.MustCompile(`^attempt to \w+ with overflow`), "rust:panic:overflow"},
	{regexp.MustCompile(`^attempt to (?:divide|calculate the remainder) .*zero`), "rust:panic:divide-by-zero"},
	{regexp.MustCompile(`already (?:mutably )?borrowed`), "rust:panic:borrow"},
	{regexp.MustCompile(`^not (?:yet )?implemented`), "rust:panic:todo"},
	{regexp.MustCompile(`^internal error: entered unreachable code`), "rust:panic:unreachable"},
}

// oldAssertion is how rustc before 1.73 words a failed assert_eq or
// assert_ne; it is read as today's wording, so lessons match across
// versions.
var oldAssertion = regexp.MustCompile("^assertion failed: `\\(left (==|!=) right\\)`")

// diag is one compiler or cargo error.
type diag struct {
	code, msg string
	location  string   // "src/lib.rs:3:9", when the error has one
	lines     []string // the error line and what rustc shows below it
}

// kind is the diag's Finding kind: its rustc code, or its class.
func (d diag) kind() string {
	if d.code != "" {
		return "rust:" + d.code
	}
	for _, k := range codelessKinds {
		if k.re.MatchString(d.msg) {
			return k.kind
		}
	}
	return "rust:compile"
}

// shown is the diag as a digest shows it: a linker error without the
// linker's command line, any other with its source excerpt.
func (d diag) shown() []string {
	if d.kind() != "rust:link" {
		return capLines(d.lines, 14)
	}
	out := d.lines[:1]
	for _, l := range d.lines[1:] {
		if linkDetailRe.MatchString(l) {
			out = append(out, l)
		}
	}
	return capLines(out, 8)
}

// failure is a panic, in a test or not, or a test that failed without one.
type failure struct {
	test    string   // the failing test; "" outside a test
	header  string   // "---- tests::it_adds stdout ----"
	panic   string   // the panic line
	message []string // what the panic says, or what the test printed last
	binary  int      // the test binary's place in the run: one per test result
}

// first is the failure's main message.
func (f failure) first() string {
	if len(f.message) == 0 {
		return f.panic
	}
	m := f.message[0]
	if op := oldAssertion.FindStringSubmatch(m); op != nil {
		return "assertion `left " + op[1] + " right` failed" + strings.TrimPrefix(m, op[0])
	}
	return m
}

// kind classifies the failure by its message.
func (f failure) kind() string {
	msg := f.first()
	for _, k := range panicKinds {
		if k.re.MatchString(msg) {
			return k.kind
		}
	}
	if f.test != "" {
		return "rust:test-fail"
	}
	return "rust:panic"
}

// shown is the failure as a digest shows it.
func (f failure) shown() []string {
	var out []string
	if f.header != "" {
		out = append(out, f.header)
	}
	if f.panic != "" {
		out = append(out, f.panic)
	}
	return append(out, capLines(f.message, 12)...)
}

// report is what one reading of the output found.
type report struct {
	diags    []diag
	failures []failure
	crashes  []string // stack overflows, signals
	results  []string // "test result: FAILED. ..."
}

// read goes through the output once.
func read(lines []string) report {
	var r report
	var section *failure // the test whose output is being read
	binary := 0
	closeSection := func() {
		if section != nil && section.panic == "" {
			r.failures = append(r.failures, *section)
		}
		section = nil
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r")
		switch {
		case sectionRe.MatchString(l):
			closeSection()
			section = &failure{test: sectionRe.FindStringSubmatch(l)[1], header: l, binary: binary}
		case l == "failures:" || resultRe.MatchString(l):
			closeSection()
			if resultRe.MatchString(l) {
				r.results = append(r.results, l)
				binary++
			}
		case section == nil && errorRe.MatchString(l):
			// In a test's section it is what the test printed.
			m := errorRe.FindStringSubmatch(l)
			if summaryRe.MatchString(m[2]) {
				continue
			}
			d := diag{code: m[1], msg: m[2], lines: []string{l}}
			for i+1 < len(lines) && !blockEnd(lines[i+1]) {
				i++
				d.lines = append(d.lines, lines[i])
				if loc := locationRe.FindStringSubmatch(lines[i]); loc != nil && d.location == "" {
					d.location = loc[1]
				}
			}
			r.diags = append(r.diags, d)
		case newPanicRe.MatchString(l) || oldPanicRe.MatchString(l):
			f, next := readPanic(lines, i)
			f.binary = binary
			if section != nil {
				f.test, f.header = section.test, section.header
				section.panic = f.panic
			}
			r.failures = append(r.failures, f)
			i = next
		case overflowRe.MatchString(l) || signalRe.MatchString(l):
			r.crashes = append(r.crashes, l)
		case section != nil && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "note: "):
			// A test that failed without a panic (one that returned an
			// Err) says why in what it printed last.
			section.message = append(section.message, l)
		}
	}
	closeSection()
	// libtest runs a binary's tests in parallel and reports each as it
	// ends: in the order of their names, one state of the code reads the
	// same each run.
	slices.SortStableFunc(r.failures, func(a, b failure) int {
		return cmp.Or(cmp.Compare(a.binary, b.binary), strings.Compare(a.test, b.test))
	})
	for i, f := range r.failures {
		if f.panic == "" && len(f.message) > 6 {
			r.failures[i].message = f.message[len(f.message)-6:]
		}
	}
	return r
}

// blockEnd is the line after an error's block: a blank line or the next
// diagnostic.
func blockEnd(l string) bool {
	return strings.TrimSpace(l) == "" || strings.HasPrefix(l, "error") || strings.HasPrefix(l, "warning")
}

// readPanic reads the panic at lines[i] and returns it with the index of
// its last line.
func readPanic(lines []string, i int) (failure, int) {
	l := lines[i]
	if m := newPanicRe.FindStringSubmatch(l); m != nil {
		f := failure{test: testName(m[1]), panic: l}
		for i+1 < len(lines) && !panicEndRe.MatchString(lines[i+1]) {
			i++
			f.message = append(f.message, lines[i])
		}
		return f, i
	}
	m := oldPanicRe.FindStringSubmatch(l)
	msg := []string{m[2]}
	for j := i; j < len(lines) && j < i+40; j++ {
		if j > i {
			msg = append(msg, lines[j])
		}
		if end := oldPanicEnd.FindStringSubmatch(msg[len(msg)-1]); end != nil {
			msg[len(msg)-1] = end[1]
			// Today's wording: the location on the panic line.
			return failure{test: testName(m[1]), panic: "thread '" + m[1] + "' panicked at " + end[2] + ":", message: msg}, j
		}
	}
	// No closing quote: the message is the panic line's rest.
	return failure{test: testName(m[1]), panic: l, message: msg[:1]}, i
}

// testName is a panicking thread's test: libtest names each test's thread
// after the test, and a program's own thread is "main".
func testName(thread string) string {
	if thread == "main" || thread == "<unnamed>" {
		return ""
	}
	return thread
}

// Parse reads cargo test, cargo build and cargo run output. Errors outrank
// panics, which outrank crashes: code that does not build runs no test.
func Parse(lines []string) lang.Finding {
	r := read(lines)
	switch {
	case len(r.diags) > 0:
		d := r.diags[0]
		keys := []string{strings.TrimSpace(d.lines[0])}
		if d.location != "" {
			keys = append(keys, d.location)
		}
		if d.kind() == "rust:link" {
			keys = append(keys, trimAll(d.shown()[1:])...)
		}
		for _, o := range r.diags[1:] {
			keys = append(keys, strings.TrimSpace(o.lines[0]))
		}
		return lang.Finding{Kind: d.kind(), Shape: signature.NormLine(d.shownMsg()), Keys: capLines(keys, 8)}
	case len(r.failures) > 0:
		f := r.failures[0]
		keys := []string{f.first()}
		if f.panic != "" {
			keys = append(keys, f.panic)
		}
		if len(f.message) > 1 {
			keys = append(keys, trimAll(f.message[1:])...)
		}
		for _, o := range r.failures[1:] {
			keys = append(keys, o.first())
		}
		return lang.Finding{Kind: f.kind(), Shape: signature.NormLine(f.first()), Keys: capLines(keys, 8)}
	case len(r.crashes) > 0:
		kind := "rust:crash"
		if overflowRe.MatchString(r.crashes[0]) {
			kind = "rust:stack-overflow"
		}
		return lang.Finding{Kind: kind, Shape: signature.NormLine(r.crashes[0]), Keys: r.crashes}
	}
	return lang.Finding{}
}

// shownMsg is the diag's message as its shape is made of: a linker error
// by what the linker could not find.
func (d diag) shownMsg() string {
	if d.kind() == "rust:link" {
		for _, l := range d.lines[1:] {
			if linkDetailRe.MatchString(l) {
				return linkDetailMsg(l)
			}
		}
	}
	return d.msg
}

// ldQuoted is GNU ld's quoting, `name', read as rustc's, `name`.
var ldQuoted = regexp.MustCompile("`([^`']*)'")

// linkDetailMsg is a linker line without the object file before it.
func linkDetailMsg(l string) string {
	l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "= note:"))
	if i := strings.Index(l, "undefined"); i > 0 {
		l = l[i:]
	}
	return ldQuoted.ReplaceAllString(l, "`$1`")
}

// digestBytes is what a digest may take of the 4000 bytes of output that
// are kept: the rest is left for the output's tail.
const digestBytes = 3000

// Digest keeps each compiler error with its location, each failing
// test's panic with its message (left and right of an assertion), a
// panic outside the tests, crashes and the test results: what a long
// output is cut down to. The first ones are kept whole while they fit in
// digestBytes.
func Digest(output string) string {
	r := read(strings.Split(output, "\n"))
	var blocks []string
	for _, d := range r.diags {
		blocks = append(blocks, strings.Join(d.shown(), "\n"))
	}
	for _, f := range r.failures {
		blocks = append(blocks, strings.Join(f.shown(), "\n"))
	}
	if len(r.crashes) > 0 {
		blocks = append(blocks, strings.Join(r.crashes, "\n"))
	}
	if len(blocks) == 0 {
		return ""
	}
	results := strings.Join(r.results, "\n")
	var b strings.Builder
	for i, block := range blocks {
		if i > 0 && b.Len()+len(block)+len(results)+4 > digestBytes {
			fmt.Fprintf(&b, "\n\n(%d more)", len(blocks)-i)
			break
		}
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(block)
	}
	if results != "" {
		b.WriteString("\n\n" + results)
	}
	return b.String()
}

// capLines keeps the first n lines, each cut to a readable length.
func capLines(lines []string, n int) []string {
	out := make([]string, 0, min(n, len(lines)))
	for _, l := range lines[:min(n, len(lines))] {
		if len(l) > 300 {
			l = l[:300] + "…"
		}
		out = append(out, l)
	}
	return out
}

// trimAll trims each line's surrounding space.
func trimAll(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimSpace(l)
	}
	return out
}
