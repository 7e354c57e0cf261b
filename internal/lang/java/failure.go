package java

import (
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/signature"
	"github.com/autocoder/autocoder/internal/truncate"
)

// The outputs read here: javac's and Maven's compiler errors, the JUnit
// console launcher's "Failures" section, surefire's report, and a JVM's
// uncaught exception.
var (
	// "src/main/java/App.java:5: error: cannot find symbol"
	javacErrRe = regexp.MustCompile(`^(\S+\.java):(\d+): error: (.+)$`)
	// "[ERROR] /p/src/main/java/App.java:[5,20] cannot find symbol"
	mavenErrRe = regexp.MustCompile(`^\[ERROR\] (\S+\.java):\[(\d+),\d+\] (.+)$`)
	// "  symbol:   variable subtotl", after a compiler error.
	symbolRe   = regexp.MustCompile(`^(?:\[ERROR\])?\s+symbol:\s+(\w+)`)
	locationRe = regexp.MustCompile(`^(?:\[ERROR\])?\s+location:\s`)
	// The JUnit console launcher's failure: "  JUnit Jupiter:CalcTest:adds()",
	// its source, and "    => org.opentest4j.AssertionFailedError: ...".
	junitHeadRe   = regexp.MustCompile(`^  JUnit [\w ]+:`)
	junitSourceRe = regexp.MustCompile(junitSource + `(?:, methodName = '([^']+)')?`)
	junitExcRe    = regexp.MustCompile(`^\s+=> (.+)$`)
	// surefire: "[ERROR] Tests run: 4, ... <<< FAILURE! - in com.x.CalcTest"
	// heads a class, "[ERROR] adds  Time elapsed: 0.01 s  <<< FAILURE!" a
	// test, whose exception is the next line.
	surefireClassRe  = regexp.MustCompile(`^\[ERROR\] Tests run: .*<<< (?:FAILURE|ERROR)! - in (\S+)$`)
	surefireTestRe   = regexp.MustCompile(`^\[ERROR\] ([\w$]+)(?:\(([\w$.]+)\))?\s+Time elapsed: .*<<< (?:FAILURE|ERROR)!$`)
	surefireResultRe = regexp.MustCompile(surefireResult)
	// "Exception in thread "main" java.lang.NullPointerException: ..." and
	// its causes.
	uncaughtRe = regexp.MustCompile(`^(?:Exception in thread "[^"]*" |Caused by: )(.+)$`)
	// An exception's first line: a class name ending in Error, Exception
	// or Failure (or Throwable), and its message.
	excRe = regexp.MustCompile(`^((?:[a-z_$][\w$]*\.)*[A-Z][\w$]*(?:Error|Exception|Failure|Throwable))(?::\s?(.*))?$`)
	// A stack frame: "\tat com.x.App.main(App.java:7)" or the launcher's
	// "       CalcTest.adds(CalcTest.java:7)".
	frameRe = regexp.MustCompile(`^\s+(?:at )?(?:[\w.$]+/)?([\w$.<>]+)\(([^()]*)\)$`)
	// The launcher's counts and surefire's closing total.
	summaryRe = regexp.MustCompile(`^\[\s+\d+ tests (?:successful|failed)\s+\]$|^\[ERROR\] Tests run: \d+, Failures: \d+, Errors: \d+, Skipped: \d+$|^\d+ errors?$`)
)

// The lines that name a failed test: the launcher's source of a failure
// ("MethodSource [className = 'com.x.CalcTest', methodName = 'adds', ...")
// and a line of surefire's results ("[ERROR]   CalcTest.adds:12 ...").
const (
	junitSource    = `^\s+(?:Method|Class)Source \[className = '([^']+)'`
	surefireResult = `^\[ERROR\]\s{2,}([\w$]+(?:\.[\w$]+)+)(?::\d+)?(?:\s|$)`
)

// failing name the failing tests: the launcher's sources name a class
// (its method is not in the same group), surefire's results
// Class.method; Named takes both back.
var failing = []*regexp.Regexp{
	regexp.MustCompile(`(?m)` + junitSource),
	regexp.MustCompile(`(?m)` + surefireResult),
}

// assertionTypes are the exceptions a failed assertion throws: a test
// failure, not a crash of the code under test.
var assertionTypes = map[string]bool{
	"AssertionFailedError":  true, // JUnit 5, and AssertJ with opentest4j
	"AssertionError":        true, // assert, JUnit 4, AssertJ without opentest4j
	"MultipleFailuresError": true, // assertAll
	"ComparisonFailure":     true,
	"SoftAssertionError":    true,
}

// compileError is one error of javac.
type compileError struct {
	lines  []string // the error line and what javac prints under it
	msg    string
	symbol string // the kind of a symbol not found: variable, method, class
}

// literalSuffixRe finds the type suffix AssertJ prints after a number
// (<9000L>), which would keep the number from being abstracted.
var literalSuffixRe = regexp.MustCompile(`\b(\d+(?:\.\d+)?)[LlFfDd]\b`)

// thrown is an exception: a failed test's, or one nothing caught.
type thrown struct {
	test    string // Class#method or Class; "" when uncaught
	head    string // the line that names the test, if any
	line    string // the exception's first line, as printed
	typ     string // its class's simple name
	msg     string // its message, lines joined
	msgRest []string
	frame   string // the first frame in the project's code
}

// report is what one pass over an output found.
type report struct {
	compile  []compileError
	failures []thrown
	uncaught []thrown
	summary  []string
	results  []string // surefire's one line per failed test
}

// read makes the report of an output's lines.
func read(lines []string) report {
	var r report
	surefireClass := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if e, ok := compileErrorAt(lines, i); ok {
			if !r.hasCompile(e.lines[0]) {
				r.compile = append(r.compile, e)
			}
			i += len(e.lines) - 1
			continue
		}
		if junitHeadRe.MatchString(l) && i+1 < len(lines) {
			if t, next, ok := junitFailureAt(lines, i); ok {
				r.failures = append(r.failures, t)
				i = next - 1
				continue
			}
		}
		if m := surefireClassRe.FindStringSubmatch(l); m != nil {
			surefireClass = m[1]
			continue
		}
		if m := surefireTestRe.FindStringSubmatch(l); m != nil && i+1 < len(lines) {
			class := surefireClass
			if m[2] != "" {
				class = m[2]
			}
			if t, next, ok := exceptionAt(lines, i+1, lines[i+1]); ok {
				t.test, t.head = testID(class, m[1]), l
				r.failures = append(r.failures, t)
				i = next - 1
			}
			continue
		}
		if m := uncaughtRe.FindStringSubmatch(l); m != nil {
			if t, next, ok := exceptionAt(lines, i, m[1]); ok {
				t.line = l
				r.uncaught = append(r.uncaught, t)
				i = next - 1
			}
			continue
		}
		if surefireResultRe.MatchString(l) {
			r.results = append(r.results, l)
			continue
		}
		if summaryRe.MatchString(strings.TrimSpace(l)) {
			r.summary = append(r.summary, strings.TrimSpace(l))
		}
	}
	return r
}

// failedCountRe finds a count of failed tests above zero in a summary.
var failedCountRe = regexp.MustCompile(`\b[1-9]\d* tests failed|\b(?:Failures|Errors): [1-9]`)

// countsFailures reports a summary that counts failed tests: all that is
// left of a report cut before its failures.
func (r report) countsFailures() bool {
	return slices.ContainsFunc(r.summary, failedCountRe.MatchString)
}

func (r report) hasCompile(line string) bool {
	for _, e := range r.compile {
		if e.lines[0] == line {
			return true
		}
	}
	return false
}

// compileErrorAt reads a compiler error starting at lines[i]: its line,
// and the source line, caret, symbol and location lines under it.
func compileErrorAt(lines []string, i int) (compileError, bool) {
	l := lines[i]
	if !strings.Contains(l, ".java:") {
		return compileError{}, false
	}
	var msg string
	if m := javacErrRe.FindStringSubmatch(l); m != nil {
		msg = m[3]
	} else if m := mavenErrRe.FindStringSubmatch(l); m != nil {
		msg = m[3]
	} else {
		return compileError{}, false
	}
	e := compileError{lines: []string{l}, msg: msg}
	for j := i + 1; j < len(lines) && j <= i+4 && continuesError(lines[j]); j++ {
		if m := symbolRe.FindStringSubmatch(lines[j]); m != nil && e.symbol == "" {
			e.symbol = m[1]
		}
		e.lines = append(e.lines, lines[j])
	}
	return e, true
}

// continuesError reports a line javac prints under an error: the source
// line, its caret, the symbol and location; not the next error, the
// count, or a line of Maven's own.
func continuesError(l string) bool {
	if symbolRe.MatchString(l) || locationRe.MatchString(l) {
		return true
	}
	return strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "[") && !strings.Contains(l, ".java:") && !summaryRe.MatchString(l)
}

// junitFailureAt reads one entry of the launcher's Failures section: the
// header, the source naming the test, and the exception.
func junitFailureAt(lines []string, i int) (thrown, int, bool) {
	src := junitSourceRe.FindStringSubmatch(lines[i+1])
	if src == nil {
		return thrown{}, 0, false
	}
	j := i + 2
	for j < len(lines) && !junitExcRe.MatchString(lines[j]) {
		if junitHeadRe.MatchString(lines[j]) || j > i+4 {
			return thrown{}, 0, false
		}
		j++
	}
	if j >= len(lines) {
		return thrown{}, 0, false
	}
	t, next, ok := exceptionAt(lines, j, junitExcRe.FindStringSubmatch(lines[j])[1])
	if !ok {
		return thrown{}, 0, false
	}
	t.test, t.head = testID(src[1], src[2]), lines[i]
	return t, next, true
}

// maxMessageLines bounds an exception's message kept past its first line.
const maxMessageLines = 8

// exceptionAt reads the exception whose first line is text (found at
// lines[i]), its message lines, and the first frame of the project's code
// in its stack; it returns the index past what it read.
func exceptionAt(lines []string, i int, text string) (thrown, int, bool) {
	m := excRe.FindStringSubmatch(strings.TrimSpace(text))
	if m == nil {
		return thrown{}, 0, false
	}
	t := thrown{line: strings.TrimSpace(lines[i]), typ: simpleName(m[1]), msg: strings.TrimSpace(m[2])}
	j := i + 1
	for ; j < len(lines); j++ {
		l := lines[j]
		if endsException(l) {
			break
		}
		if frameRe.MatchString(l) {
			break
		}
		if len(t.msgRest) < maxMessageLines && (len(t.msgRest) > 0 || strings.TrimSpace(l) != "") {
			t.msgRest = append(t.msgRest, l)
		}
	}
	for ; j < len(lines); j++ {
		f := frameRe.FindStringSubmatch(lines[j])
		if f == nil {
			if strings.TrimSpace(lines[j]) == "[...]" || strings.HasPrefix(strings.TrimSpace(lines[j]), "... ") {
				continue
			}
			break
		}
		if t.frame == "" && projectFrame(f[1], f[2]) {
			t.frame = strings.TrimPrefix(strings.TrimSpace(lines[j]), "at ")
		}
	}
	for _, rest := range t.msgRest {
		if s := strings.TrimSpace(rest); s != "" {
			t.msg = strings.TrimSpace(t.msg + " " + s)
		}
	}
	return t, j, true
}

// endsException reports a line that cannot continue an exception's
// message: the next entry, report or summary.
func endsException(l string) bool {
	s := strings.TrimSpace(l)
	return junitHeadRe.MatchString(l) || strings.HasPrefix(l, "[") || strings.HasPrefix(s, "[...]") ||
		strings.HasPrefix(s, "Caused by: ") || strings.HasPrefix(l, "Test run finished") ||
		strings.HasPrefix(l, "Exception in thread ") || strings.HasPrefix(s, "MethodSource [") || strings.HasPrefix(s, "ClassSource [")
}

// libraryPrefixes are the packages of the JDK, the test frameworks and
// the build tools: a frame in them is not where the project went wrong.
var libraryPrefixes = []string{"java.", "javax.", "jdk.", "sun.", "com.sun.", "org.junit.", "junit.", "org.opentest4j.", "org.assertj.", "org.apache.maven."}

func projectFrame(method, loc string) bool {
	if !strings.Contains(loc, ".java:") {
		return false
	}
	for _, p := range libraryPrefixes {
		if strings.HasPrefix(method, p) {
			return false
		}
	}
	return true
}

// simpleName is a class's name without its package.
func simpleName(class string) string {
	return class[strings.LastIndexByte(class, '.')+1:]
}

// testID is a test as Named takes it back.
func testID(class, method string) string {
	if method == "" {
		return class
	}
	return class + "#" + method
}

// kind is the kind of a thrown exception: a failed assertion is a test
// failure, running out of heap the run's memory, anything else the
// exception itself.
func (t thrown) kind() string {
	switch {
	case assertionTypes[t.typ]:
		return "junit:test-fail"
	case t.typ == "OutOfMemoryError":
		return signature.KindOOM
	}
	return "java:" + t.typ
}

// shape is the exception's message with its values abstracted; a failed
// assertion's is its message alone, since which assertion failed is what
// lessons are about.
func (t thrown) shape() string {
	if assertionTypes[t.typ] {
		if t.msg == "" {
			return t.typ
		}
		return signature.NormLine(literalSuffixRe.ReplaceAllString(t.msg, "$1"))
	}
	if t.msg == "" {
		return t.typ
	}
	return signature.NormLine(t.typ + ": " + t.msg)
}

func (t thrown) keys() []string {
	keys := []string{t.line}
	for _, k := range []string{t.frame, strings.TrimSpace(t.head)} {
		if k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// parse reads a Java run's output. Compiler errors outrank everything (no
// test ran), then running out of memory, an uncaught exception, a test
// that crashed, and last failed assertions.
func parse(lines []string) lang.Finding {
	r := read(lines)
	if len(r.compile) > 0 {
		return compileFinding(r.compile)
	}
	all := append(append([]thrown{}, r.uncaught...), r.failures...)
	for _, pick := range []func(thrown) bool{
		func(t thrown) bool { return t.typ == "OutOfMemoryError" },
		func(t thrown) bool { return t.test == "" },
		func(t thrown) bool { return !assertionTypes[t.typ] },
		func(thrown) bool { return true },
	} {
		for i, t := range all {
			if pick(t) {
				return thrownFinding(t, append(all[:i:i], all[i+1:]...))
			}
		}
	}
	if len(r.results) > 0 || r.countsFailures() {
		keys := append(append([]string{}, r.results...), r.summary...)
		return lang.Finding{Kind: "junit:test-fail", Shape: signature.NormLine(keys[0]), Keys: keys}
	}
	return lang.Finding{}
}

func compileFinding(errs []compileError) lang.Finding {
	first := errs[0]
	shape := signature.NormLine(first.msg)
	if first.symbol != "" {
		shape += " (" + first.symbol + ")"
	}
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.lines[0])
		for _, l := range e.lines[1:] {
			if symbolRe.MatchString(l) {
				keys = append(keys, l)
			}
		}
	}
	return lang.Finding{Kind: "java:compile:" + compileClass(first.msg), Shape: shape, Keys: keys}
}

func thrownFinding(t thrown, others []thrown) lang.Finding {
	keys := t.keys()
	for _, o := range others {
		if !slices.Contains(keys, o.line) {
			keys = append(keys, o.line)
		}
	}
	return lang.Finding{Kind: t.kind(), Shape: t.shape(), Keys: keys}
}

// compileClasses classify javac's messages, first match wins.
var compileClasses = []struct {
	re    *regexp.Regexp
	class string
}{
	{regexp.MustCompile(`^cannot find symbol`), "cannot-find-symbol"},
	{regexp.MustCompile(`^package \S+ does not exist`), "missing-package"},
	{regexp.MustCompile(`^incompatible types`), "incompatible-types"},
	{regexp.MustCompile(`cannot be applied to given types|^no suitable (?:method|constructor) found`), "wrong-arguments"},
	{regexp.MustCompile(`^missing return statement`), "missing-return"},
	{regexp.MustCompile(`^unreported exception`), "unreported-exception"},
	{regexp.MustCompile(`might not have been initialized`), "uninitialized"},
	{regexp.MustCompile(`is already defined in`), "already-defined"},
	{regexp.MustCompile(`is not abstract and does not override`), "missing-override"},
	{regexp.MustCompile(`cannot be referenced from a static context`), "static-context"},
	{regexp.MustCompile(`should be declared in a file named`), "file-name"},
	{regexp.MustCompile(`has private access`), "access"},
	{regexp.MustCompile(`^cannot assign a value to final variable`), "final"},
	{regexp.MustCompile(`^bad operand types?`), "bad-operand"},
	{regexp.MustCompile(`cannot be dereferenced`), "dereference"},
	{regexp.MustCompile(`^unreachable statement`), "unreachable"},
	{regexp.MustCompile(`expected$|^illegal start of|^not a statement|^reached end of file|^unclosed|^illegal character`), "syntax"},
}

func compileClass(msg string) string {
	for _, c := range compileClasses {
		if c.re.MatchString(msg) {
			return c.class
		}
	}
	return "other"
}

// digestBudget keeps a digest inside the 4000 bytes an output is cut to,
// with room for the cut's own marker.
const digestBudget = 3500

// digest picks from a long output what a fix needs: each compiler error
// with its source and symbol lines; each failed test's name, exception,
// message and first frame in the project's code; uncaught exceptions; and
// the counts. "" when none of it is there.
func digest(output string) string {
	r := read(strings.Split(strings.ReplaceAll(output, "\r\n", "\n"), "\n"))
	var blocks []string
	for _, e := range r.compile {
		blocks = append(blocks, strings.Join(e.lines, "\n"))
	}
	for _, t := range append(append([]thrown{}, r.uncaught...), r.failures...) {
		blocks = append(blocks, t.digest())
	}
	blocks = append(blocks, r.results...)
	if len(blocks) == 0 && !r.countsFailures() {
		return ""
	}
	counts := strings.Join(r.summary, "\n")
	return strings.Trim(fit(blocks, digestBudget-len(counts)-1)+"\n"+counts, "\n")
}

func (t thrown) digest() string {
	var b strings.Builder
	if t.test != "" {
		b.WriteString("FAILED " + t.test + "\n")
	}
	b.WriteString(t.line)
	for _, l := range t.msgRest {
		b.WriteString("\n" + l)
	}
	if t.frame != "" {
		b.WriteString("\n    at " + t.frame)
	}
	return b.String()
}

// fit joins blocks in order while they fit in budget bytes; the first
// one is always kept, cut to the budget.
func fit(blocks []string, budget int) string {
	var b strings.Builder
	for _, blk := range blocks {
		if blk == "" {
			continue
		}
		if b.Len() > 0 && b.Len()+1+len(blk) > budget {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(blk)
	}
	return truncate.Head(b.String(), budget)
}
