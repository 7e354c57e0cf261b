package tools

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// fileFilter returns a quick test of whether a file surely holds no line
// matching expr, so search splits only the files that may. A literal every
// match must contain is looked for directly; otherwise the expression runs
// once over the whole file in multi-line mode.
func fileFilter(expr string) func([]byte) bool {
	never := func([]byte) bool { return false }
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return never
	}
	if lit, fold := requiredLiteral(parsed.Simplify()); lit != "" {
		if !fold {
			want := []byte(lit)
			return func(data []byte) bool { return !bytes.Contains(data, want) }
		}
		if lower := strings.ToLower(lit); isASCII(lit) {
			return func(data []byte) bool { return !containsFoldASCII(data, lower) }
		}
	}
	// With (?m), ^ and $ hold at every line as they do per line. \A and \z
	// do not (they hold at each line's ends per line, at the file's ends
	// here), and a flag group could turn multi-line mode off again.
	if strings.Contains(expr, `\A`) || strings.Contains(expr, `\z`) || strings.Contains(expr, "(?") {
		return never
	}
	whole, err := regexp.Compile("(?m)" + expr)
	if err != nil {
		return never
	}
	return func(data []byte) bool { return !whole.Match(data) }
}

// requiredLiteral returns the longest literal that every match of re
// contains, and whether it matches without regard to case.
func requiredLiteral(re *syntax.Regexp) (string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return string(re.Rune), re.Flags&syntax.FoldCase != 0
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best, bestFold := "", false
		for _, sub := range re.Sub {
			if lit, fold := requiredLiteral(sub); len(lit) > len(best) {
				best, bestFold = lit, fold
			}
		}
		return best, bestFold
	}
	return "", false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// containsFoldASCII reports whether data holds lower (lower-case ASCII)
// in any mix of cases. Unicode folds two non-ASCII letters onto ASCII ones,
// the Kelvin sign onto k and the long s onto s; a file holding them where
// the literal has those letters is not ruled out.
func containsFoldASCII(data []byte, lower string) bool {
	if strings.Contains(lower, "k") && bytes.Contains(data, []byte("\u212a")) ||
		strings.Contains(lower, "s") && bytes.Contains(data, []byte("\u017f")) {
		return true
	}
	n := len(lower)
	for i := 0; i+n <= len(data); i++ {
		j := 0
		for ; j < n; j++ {
			c := data[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lower[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
