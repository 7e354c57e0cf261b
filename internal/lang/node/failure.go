package node

import (
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/signature"
)

// failure reads the output of tsc, node --test (TAP and spec reporters),
// jest and a crashing node.
var failure = lang.Failure{
	Parse:  parse,
	Digest: digest,
	Failing: []*regexp.Regexp{
		// A file that failed as a whole is named by its path: no test.
		regexp.MustCompile(`(?m)^\s*not ok \d+ - ([^/\s].*?)(?:\s+# .*)?$`),
		regexp.MustCompile(`(?m)^\s*✖ (.+?) \([\d.]+m?s\)$`),
		// Jest's "Test suite failed to run" is a file, not a test: it
		// matches with an empty group.
		regexp.MustCompile(`(?m)^\s*● (?:Test suite failed to run|(.+))$`),
	},
}

var (
	tscErrorRe = regexp.MustCompile(`^(?:\S.*\(\d+,\d+\): )?error (TS\d+): (.*)$`)
	tapNotOkRe = regexp.MustCompile(`^\s*not ok \d+ - (.+?)(?:\s+# .*)?$`)
	// tapFieldRe is a field of a TAP failure's YAML block: "  error: |-".
	tapFieldRe = regexp.MustCompile(`^\s*(error|name|code|location|expected|actual|stack): ?(.*)$`)
	specFailRe = regexp.MustCompile(`^\s*✖ (.+?) \([\d.]+m?s\)$`)
	jestHeadRe = regexp.MustCompile(`^\s*● (.+)$`)
	// jsErrorRe is a thrown error's first line: "TypeError: x is not a
	// function", "AssertionError [ERR_ASSERTION]: Expected ...", with
	// TAP's comment prefix when node --test shows a file's crash.
	jsErrorRe = regexp.MustCompile(`^(?:# )?\s*(?:Uncaught )?([A-Z]\w*(?:Error|Exception)|Error)(?: \[(\w+)\])?: (.+)$`)
	// frameRe is a stack frame; its group is the file:line:col.
	frameRe = regexp.MustCompile(`^(?:# )?\s*(?:at )?(?:.*\()?((?:file://)?[^\s()]+:\d+:\d+)\)?$`)
	// codeFrameRe is a line of jest's source excerpt: "  > 5 |   expect(...".
	codeFrameRe = regexp.MustCompile(`^\s*>?\s*\d*\s*\|`)
	// crashHeadRe is the "file:line" line node prints above a crash's
	// source line and caret.
	crashHeadRe = regexp.MustCompile(`^(?:# )?(/\S+|file://\S+):\d+$`)
)

// parse finds the first failure: a type error stops the tests before
// they run, so tsc's comes first, then a test's, then a crash.
func parse(lines []string) lang.Finding {
	for _, p := range []func([]string) (lang.Finding, bool){parseTsc, parseTAP, parseJest, parseSpec, parseCrash} {
		if f, ok := p(lines); ok {
			return f
		}
	}
	return lang.Finding{}
}

// parseTsc: "src/a.ts(3,9): error TS2322: Type 'number' is not ...".
func parseTsc(lines []string) (lang.Finding, bool) {
	var f lang.Finding
	for _, l := range lines {
		m := tscErrorRe.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if f.Kind == "" {
			f = lang.Finding{Kind: "typescript:" + m[1], Shape: signature.NormLine(m[2])}
		}
		if len(f.Keys) < 5 {
			f.Keys = append(f.Keys, strings.TrimSpace(l))
		}
	}
	return f, f.Kind != ""
}

// tapFailure is one "not ok" of node --test's TAP output with its YAML
// block.
type tapFailure struct {
	head, name, errName, code, location, expected, actual, frame string
	message                                                      []string
}

// aggregate reports a suite's or a file's failure that only says its
// tests failed: the failing tests are reported on their own.
func (t tapFailure) aggregate() bool {
	msg := strings.Join(t.message, " ")
	return t.code == "ERR_TEST_FAILURE" && (strings.Contains(msg, "subtest") || msg == "test failed")
}

// assertion reports a failed assert rather than a thrown error.
func (t tapFailure) assertion() bool {
	return t.errName == "AssertionError" || t.code == "ERR_ASSERTION"
}

// tapFailures reads every "not ok" with its block.
func tapFailures(lines []string) []tapFailure {
	var out []tapFailure
	for i := 0; i < len(lines); i++ {
		m := tapNotOkRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		t := tapFailure{head: strings.TrimSpace(lines[i]), name: m[1]}
		// The block's fields are at the indent of its "---"; the lines
		// of a multi-line value are deeper.
		field, fieldIndent := "", -1
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "..." && !tapNotOkRe.MatchString(lines[i]); i++ {
			l := lines[i]
			if fieldIndent < 0 && strings.TrimSpace(l) == "---" {
				fieldIndent = indent(l)
				continue
			}
			if fm := tapFieldRe.FindStringSubmatch(l); fm != nil && indent(l) == fieldIndent {
				field = fm[1]
				v := unquote(fm[2])
				switch field {
				case "error":
					if v != "|-" && v != "|" && v != "" {
						t.message = append(t.message, v)
					}
				case "name":
					t.errName = v
				case "code":
					t.code = v
				case "location":
					t.location = v
				case "expected":
					t.expected = v
				case "actual":
					t.actual = v
				}
				continue
			}
			v := strings.TrimSpace(l)
			switch {
			case v == "":
			case field == "error":
				t.message = append(t.message, v)
			case field == "stack" && t.frame == "" && userFrame(v):
				t.frame = v
			}
		}
		i--
		out = append(out, t)
	}
	return out
}

// parseTAP keys node --test's first failing test.
func parseTAP(lines []string) (lang.Finding, bool) {
	fails := tapFailures(lines)
	for _, t := range fails {
		if t.aggregate() || len(t.message) == 0 {
			continue
		}
		msg := strings.Join(t.message, " ")
		keys := nonEmpty(t.head, t.location, t.message[0], fieldLine("expected", t.expected), fieldLine("actual", t.actual), t.frame)
		if t.assertion() {
			return lang.Finding{Kind: "node:test-fail", Shape: signature.NormLine(msg), Keys: keys}, true
		}
		return lang.Finding{Kind: "javascript:" + errKind(t.errName, t.code), Shape: signature.NormLine(msg), Keys: keys}, true
	}
	// A file that failed as a whole: its crash is in TAP comments.
	if len(fails) > 0 {
		if f, ok := parseCrash(lines); ok {
			return f, true
		}
		return lang.Finding{Kind: "node:test-fail", Shape: signature.NormLine(fails[0].name), Keys: []string{fails[0].head}}, true
	}
	return lang.Finding{}, false
}

// parseJest keys jest's first failing test ("● suite › test"), or the
// error of a test file that failed to run.
func parseJest(lines []string) (lang.Finding, bool) {
	for i, l := range lines {
		m := jestHeadRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		body := jestBody(lines[i+1:])
		if len(body) == 0 {
			continue
		}
		keys := append([]string{strings.TrimSpace(l)}, body...)
		if e := jsErrorRe.FindStringSubmatch(body[0]); e != nil {
			return lang.Finding{Kind: "javascript:" + errKind(e[1], e[2]), Shape: signature.NormLine(e[3]), Keys: keys}, true
		}
		return lang.Finding{Kind: "jest:test-fail", Shape: signature.NormLine(body[0]), Keys: keys}, true
	}
	return lang.Finding{}, false
}

// jestBody is a "●" block's message: its lines up to the source excerpt
// or the stack, and the first frame of the user's code.
func jestBody(lines []string) []string {
	var body []string
	excerpt := false
	for _, l := range lines {
		v := strings.TrimSpace(l)
		switch {
		case jestHeadRe.MatchString(l) || strings.HasPrefix(v, "Test Suites:") || strings.HasPrefix(v, "Tests:"):
			return body
		case strings.HasPrefix(v, "at "):
			if userFrame(v) {
				return append(body, v)
			}
		case codeFrameRe.MatchString(l):
			excerpt = true
		case v != "" && !excerpt && len(body) < 8:
			body = append(body, v)
		}
	}
	return body
}

// parseSpec keys the spec reporter's first failing test ("✖ name (2ms)"
// and its error below).
func parseSpec(lines []string) (lang.Finding, bool) {
	for i, l := range lines {
		if !specFailRe.MatchString(l) || i+1 >= len(lines) {
			continue
		}
		e := jsErrorRe.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
		if e == nil {
			continue
		}
		keys := []string{strings.TrimSpace(l), strings.TrimSpace(lines[i+1])}
		msg := e[3]
		// An assertion's message goes on after its colon: "1 !== 2".
		if strings.HasSuffix(msg, ":") {
			if next := firstNonBlank(lines[i+2:]); next != "" {
				msg += " " + next
				keys = append(keys, next)
			}
		}
		if e[1] == "AssertionError" {
			return lang.Finding{Kind: "node:test-fail", Shape: signature.NormLine(msg), Keys: keys}, true
		}
		return lang.Finding{Kind: "javascript:" + errKind(e[1], e[2]), Shape: signature.NormLine(msg), Keys: keys}, true
	}
	return lang.Finding{}, false
}

// parseCrash keys an uncaught error: its first line, where it was thrown
// ("/app/x.js:2" above the source line) and the first frame of the
// user's code.
func parseCrash(lines []string) (lang.Finding, bool) {
	for i, l := range lines {
		e := jsErrorRe.FindStringSubmatch(l)
		if e == nil || indent(strings.TrimPrefix(l, "# ")) > 0 {
			continue
		}
		keys := []string{strings.TrimPrefix(l, "# ")}
		if h := crashHead(lines[:i]); h != "" {
			keys = append(keys, h)
		}
		for _, f := range lines[i+1:] {
			if v := strings.TrimSpace(strings.TrimPrefix(f, "#")); userFrame(v) {
				keys = append(keys, v)
				break
			}
		}
		return lang.Finding{Kind: "javascript:" + errKind(e[1], e[2]), Shape: signature.NormLine(e[3]), Keys: keys}, true
	}
	return lang.Finding{}, false
}

// crashHead finds the "file:line" node printed a few lines above a crash.
func crashHead(before []string) string {
	for j := len(before) - 1; j >= 0 && j >= len(before)-4; j-- {
		if crashHeadRe.MatchString(before[j]) {
			return strings.TrimPrefix(before[j], "# ")
		}
	}
	return ""
}

// errKind is an error's class, or for a plain Error its code
// ("ERR_MODULE_NOT_FOUND"), which says more.
func errKind(name, code string) string {
	if name == "Error" && code != "" {
		return code
	}
	if name == "" {
		return "Error"
	}
	return name
}

// userFrame reports a stack frame in the user's code: not Node's own, not
// the test runner's, not a package's.
func userFrame(frame string) bool {
	m := frameRe.FindStringSubmatch(frame)
	if m == nil {
		return false
	}
	loc := m[1]
	return !strings.HasPrefix(loc, "node:") && !strings.Contains(loc, "node_modules/") &&
		!strings.Contains(loc, "usr/share/nodejs/")
}

// firstNonBlank is the first of the lines with text, trimmed.
func firstNonBlank(lines []string) string {
	for _, l := range lines {
		if v := strings.TrimSpace(l); v != "" {
			return v
		}
	}
	return ""
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// unquote strips the YAML single quotes of a TAP field's value.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		v = strings.ReplaceAll(v[1:len(v)-1], "''", "'")
	}
	return v
}

func fieldLine(name, v string) string {
	if v == "" {
		return ""
	}
	return name + ": " + v
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
