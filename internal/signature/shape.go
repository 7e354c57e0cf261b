package signature

import (
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/truncate"
)

// Placeholders that stand for the volatile parts of a message.
const (
	phPath = "<path>"
	phNum  = "<n>"
	phID   = "<id>"
	phStr  = "<str>"
	phAddr = "<addr>"
	phDur  = "<dur>"
)

var (
	addrRe = regexp.MustCompile(`\b0x[0-9a-fA-F]+\b`)
	// A path has a slash between name segments, or is a bare file name
	// with a source-like extension.
	pathRe   = regexp.MustCompile(`(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*|\b[\w.-]*\w\.(?:py|pyc|go|mod|sum|txt|json|ya?ml|toml|cfg|ini|js|ts|rs)\b`)
	nodeIDRe = regexp.MustCompile(`::[\w\[\]./-]+`)
	durRe    = regexp.MustCompile(`\b(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+\b`)
	quoteRe  = regexp.MustCompile("(^|[^\\w])(?:'([^'\\n]*)'|\"([^\"\\n]*)\"|`([^`\\n]*)`)")
	numRe    = regexp.MustCompile(`(^|[^\w])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b`)
	identRe  = regexp.MustCompile(`^[A-Za-z_][\w.]*$`)
	spaceRe  = regexp.MustCompile(`\s+`)
	callRe   = regexp.MustCompile(`\b[A-Za-z_][\w.]*\(`)
)

// keptQuoted are quoted names that carry meaning rather than naming user
// code: an attribute error on None is a missing check, not a typo.
var keptQuoted = map[string]bool{"NoneType": true}

// normLine abstracts the volatile parts of one line. It is applied until
// nothing changes, so normalizing its own output is a no-op.
func normLine(s string) string {
	// Placeholders are at most a few bytes longer than what they replace,
	// so a generous prefix normalizes to the same first maxLine bytes.
	s = truncate.Head(s, 4*maxLine)
	for range 4 {
		next := normPass(s)
		if next == s {
			break
		}
		s = next
	}
	return s
}

func normPass(s string) string {
	if strings.Contains(s, "0x") {
		s = addrRe.ReplaceAllString(s, phAddr)
	}
	if strings.ContainsAny(s, "/.") {
		s = pathRe.ReplaceAllStringFunc(s, func(m string) string {
			if !strings.ContainsFunc(m, isLetter) {
				return m
			}
			return phPath
		})
	}
	if strings.Contains(s, "::") {
		s = nodeIDRe.ReplaceAllString(s, "::"+phID)
	}
	s = durRe.ReplaceAllString(s, phDur)
	if strings.ContainsAny(s, "'\"`") {
		s = replaceQuoted(s)
	}
	s = numRe.ReplaceAllString(s, "${1}"+phNum)
	s = strings.TrimSpace(spaceRe.ReplaceAllString(s, " "))
	return truncate.Head(s, maxLine)
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// replaceQuoted turns quoted identifiers into <id> and other quoted
// literals into <str>; a quoted placeholder loses its quotes.
func replaceQuoted(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range quoteRe.FindAllStringSubmatchIndex(s, -1) {
		var content string
		for g := 2; g <= 4; g++ {
			if m[2*g] >= 0 {
				content = s[m[2*g]:m[2*g+1]]
			}
		}
		b.WriteString(s[last:m[3]]) // up to and including the prefix char
		switch {
		case keptQuoted[content]:
			b.WriteString("'" + content + "'")
		case isPlaceholder(content):
			b.WriteString(content)
		case identRe.MatchString(content):
			b.WriteString(phID)
		default:
			b.WriteString(phStr)
		}
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

func isPlaceholder(s string) bool {
	switch s {
	case phPath, phNum, phID, phStr, phAddr, phDur:
		return true
	}
	return false
}

// normTestMsg also abstracts the called function in a test's own failure
// message ("Add(2, 3) = 6, want 5"), which names user code.
func normTestMsg(s string) string {
	return normLine(callRe.ReplaceAllString(normLine(s), phID+"("))
}

// NormLine is a key line with its volatile parts (paths, numbers, names,
// quoted values) replaced by placeholders: what a language's failure
// parser makes a Finding's Shape of.
func NormLine(s string) string { return normLine(s) }
