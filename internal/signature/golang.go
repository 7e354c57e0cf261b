package signature

import (
	"github.com/autocoder/autocoder/internal/lang"

	"regexp"
	"strings"
)

// num matches a number or its placeholder, so normalized text parses again.
const num = `(?:\d+|<n>)`

var (
	// Compiler and vet diagnostics carry line and column.
	goPosRe = regexp.MustCompile(`^(vet: )?(?:\S+\.go|<path>):` + num + `:` + num + `: (.+)$`)
	// t.Errorf output carries only a line.
	goLogRe  = regexp.MustCompile(`^\s*(?:\S+\.go|<path>):` + num + `: (.+)$`)
	goFailRe = regexp.MustCompile(`^\s*--- FAIL: \S+`)
	// A panic in a test is reported again after the test's recovery.
	recoveredRe   = regexp.MustCompile(` \[recovered[^\]]*\]$`)
	goBuildFailRe = regexp.MustCompile(`^FAIL\s+\S+\s+\[(build|setup) failed\]$`)
)

// goRule classifies one diagnostic message. An empty shape means the
// message is normalized generically; otherwise shape is a regexp template.
type goRule struct {
	re    *regexp.Regexp
	kind  string
	shape string
}

func rule(pattern, kind, shape string) goRule {
	return goRule{re: regexp.MustCompile(strings.ReplaceAll(pattern, "NUM", num)), kind: kind, shape: shape}
}

var goCompileRules = []goRule{
	rule(`^undefined: \S+$`, "go:compile:undefined", "undefined: <id>"),
	rule(`^\S+ undefined \(type .+ has no field or method \S+`, "go:compile:undefined", "<id> undefined (type <id> has no field or method <id>)"),
	rule(`^(?:declared and not used: \S+|\S+ declared and not used)$`, "go:compile:unused-var", "declared and not used: <id>"),
	rule(`^\S+ imported (?:as \S+ )?and not used$`, "go:compile:unused-import", "<id> imported and not used"),
	rule(`^invalid operation: .+ \(mismatched types .+ and .+\)$`, "go:compile:mismatched-types", "invalid operation: <expr> (mismatched types <type> and <type>)"),
	rule(`^missing return$`, "go:compile:missing-return", "missing return"),
	rule(`^cannot use .+ as .+ value in (\w+)`, "go:compile:cannot-use", "cannot use <expr> as <type> value in $1"),
	rule(`^(not enough|too many) arguments in call to \S+`, "go:compile:arg-count", "$1 arguments in call to <id>"),
	rule(`^(not enough|too many) return values`, "go:compile:return-count", "$1 return values"),
	rule(`^\S+ redeclared in this block`, "go:compile:redeclared", "<id> redeclared in this block"),
	rule(`^syntax error: `, "go:compile:syntax", ""),
	rule(`no required module provides package|cannot find package|is not in std`, "go:build:missing-package", "no module provides package <path>"),
	rule(`.`, "go:compile:other", ""),
}

var goVetRules = []goRule{
	rule(`^\S+ format %\S+ has arg .+ of wrong type .+$`, "go:vet", "<id> format <verb> has arg <expr> of wrong type <type>"),
	rule(`^\S+ format %\S+ reads arg #NUM, but call has NUM args?$`, "go:vet", "<id> format <verb> reads arg #<n>, but call has <n> args"),
	rule(`^\S+ call needs NUM args? but has NUM args?$`, "go:vet", "<id> call needs <n> args but has <n> args"),
	rule(`^\S+ call has arguments but no formatting directives$`, "go:vet", "<id> call has arguments but no formatting directives"),
	rule(`.`, "go:vet", ""),
}

// goPanicKinds classifies panic and fatal messages by prefix, first match
// wins.
var goPanicKinds = []struct{ prefix, kind string }{
	{"assignment to entry in nil map", "go:panic:nil-map"},
	// The runtime reports index and slice bounds through one error type.
	{"runtime error: index out of range", "go:panic:index-out-of-range"},
	{"runtime error: slice bounds out of range", "go:panic:index-out-of-range"},
	{"runtime error: invalid memory address or nil pointer dereference", "go:panic:nil-pointer"},
	{"runtime error: integer divide by zero", "go:panic:divide-by-zero"},
	{"runtime error: ", "go:panic:runtime"},
	{"interface conversion: ", "go:panic:type-assertion"},
	{"send on closed channel", "go:panic:closed-channel"},
	{"close of closed channel", "go:panic:closed-channel"},
	{"close of nil channel", "go:panic:closed-channel"},
	{"test timed out after", KindTimeout},
	{"all goroutines are asleep", "go:deadlock"},
	{"concurrent map", "go:concurrent-map-access"},
	{"stack overflow", "go:stack-overflow"},
	{"runtime: out of memory", KindOOM},
}

func panicKind(msg, fallback string) string {
	for _, p := range goPanicKinds {
		if strings.HasPrefix(msg, p.prefix) {
			return p.kind
		}
	}
	return fallback
}

// classify returns the kind and shape of a diagnostic message.
func classify(rules []goRule, msg string) (kind, shape string) {
	for _, r := range rules {
		m := r.re.FindStringSubmatchIndex(msg)
		if m == nil {
			continue
		}
		if r.shape == "" {
			return r.kind, normLine(msg)
		}
		return r.kind, string(r.re.ExpandString(nil, r.shape, msg, m))
	}
	return "", ""
}

// parseGo reads go build, go vet and go test output. Diagnostics outrank
// panics, which outrank plain test failures: a package that does not build
// runs no tests.
func ParseGo(lines []string) lang.Finding {
	var (
		diags      []string // key lines, vet ones prefixed "vet: "
		firstDiag  string
		firstVet   bool
		panics     []string
		fails      []string
		failMsgs   []string
		buildFails []string
		tool       []string
		inVet      bool
		inFail     bool
	)
	for _, l := range lines {
		if strings.HasPrefix(l, "# ") {
			// "# [pkg]" heads vet's findings; "# pkg [pkg.test]" the compiler's.
			inVet = strings.HasPrefix(l, "# [")
			inFail = false
			continue
		}
		located := strings.Contains(l, ".go:") || strings.Contains(l, "<path>:")
		if m := matchIf(located, goPosRe, l); m != nil {
			vet := inVet || m[1] != ""
			line := l
			if vet && m[1] == "" {
				line = "vet: " + l
			}
			if len(diags) == 0 {
				firstDiag, firstVet = m[2], vet
			}
			diags = append(diags, line)
			continue
		}
		if strings.Contains(l, "--- FAIL") && goFailRe.MatchString(l) {
			inFail = true
			fails = append(fails, "--- FAIL: "+phID)
			continue
		}
		if m := matchIf(located, goLogRe, l); m != nil && (inFail || l[0] == ' ' || l[0] == '\t') {
			failMsgs = append(failMsgs, l)
			continue
		}
		switch {
		case strings.HasPrefix(l, "panic:"):
			panics = append(panics, recoveredRe.ReplaceAllString(l, ""))
		case strings.HasPrefix(l, "fatal error:"):
			panics = append(panics, l)
		case strings.HasPrefix(l, "FAIL") && goBuildFailRe.MatchString(l):
			buildFails = append(buildFails, l)
		case strings.HasPrefix(l, "go: "):
			tool = append(tool, l)
		}
		if l != "" && l[0] != ' ' && l[0] != '\t' {
			inFail = false
		}
	}
	switch {
	case len(diags) > 0:
		rules := goCompileRules
		if firstVet {
			rules = goVetRules
		}
		kind, shape := classify(rules, firstDiag)
		return lang.Finding{Kind: kind, Shape: shape, Keys: diags}
	case len(panics) > 0:
		msg, fallback := strings.TrimPrefix(panics[0], "panic:"), "go:panic"
		if after, ok := strings.CutPrefix(panics[0], "fatal error:"); ok {
			msg, fallback = after, "go:fatal"
		}
		msg = strings.TrimSpace(msg)
		return lang.Finding{Kind: panicKind(msg, fallback), Shape: normLine(panics[0]), Keys: append(panics, fails...)}
	case len(fails) > 0:
		shape := normLine(fails[0])
		if len(failMsgs) > 0 {
			shape = normTestMsg(goLogRe.FindStringSubmatch(failMsgs[0])[1])
		}
		keys := append(fails[:1:1], failMsgs...)
		return lang.Finding{Kind: "go:test-fail", Shape: shape, Keys: append(keys, fails[1:]...)}
	case len(buildFails) > 0 || len(tool) > 0:
		keys := append(tool, buildFails...)
		return lang.Finding{Kind: "go:build", Shape: normLine(keys[0]), Keys: keys}
	}
	return lang.Finding{}
}

// matchIf runs re only when a cheap test says it can match.
func matchIf(ok bool, re *regexp.Regexp, s string) []string {
	if !ok {
		return nil
	}
	return re.FindStringSubmatch(s)
}
