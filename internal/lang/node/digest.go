package node

import (
	"regexp"
	"strings"
)

// Digest bounds: the first failures, each with its first message lines,
// are what a model can act on in one attempt.
const (
	maxFailures     = 20
	maxMessageLines = 6
	maxTscErrors    = 40
)

// summaryRe are the runners' count lines: "# fail 2", "ℹ fail 2",
// "Tests:       2 failed, 1 passed, 3 total".
var summaryRe = regexp.MustCompile(`^\s*(?:[#ℹ] (?:tests|pass|fail) \d+|Tests:\s+.*|Test Suites:\s+.*)$`)

// digest keeps what matters of a long output: tsc's errors, each failing
// test with its message, expected and actual values and the line of the
// user's code, a crash with where it happened, and the counts.
func digest(output string) string {
	lines := strings.Split(output, "\n")
	var blocks [][]string
	for _, e := range tscErrors(lines) {
		blocks = append(blocks, []string{e})
	}
	blocks = append(blocks, tapDigest(lines)...)
	blocks = append(blocks, jestDigest(lines)...)
	if len(blocks) == 0 {
		blocks = specDigest(lines)
	}
	if len(blocks) == 0 {
		if f, ok := parseCrash(lines); ok {
			blocks = append(blocks, f.Keys)
		}
	}
	if len(blocks) == 0 {
		return ""
	}
	var b strings.Builder
	for _, blk := range blocks {
		b.WriteString(strings.Join(blk, "\n  "))
		b.WriteByte('\n')
	}
	for _, l := range lines {
		if summaryRe.MatchString(l) {
			b.WriteString(strings.TrimSpace(l))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func tscErrors(lines []string) []string {
	var out []string
	for _, l := range lines {
		if v := strings.TrimSpace(l); tscErrorRe.MatchString(v) && len(out) < maxTscErrors {
			out = append(out, v)
		}
	}
	return out
}

// tapDigest is each failing test of node --test's TAP output; a file
// that failed as a whole brings its crash.
func tapDigest(lines []string) [][]string {
	var out [][]string
	crashed := false
	for _, t := range tapFailures(lines) {
		if t.aggregate() {
			crashed = crashed || strings.Join(t.message, " ") == "test failed"
			continue
		}
		if len(out) == maxFailures {
			break
		}
		out = append(out, nonEmpty(append(append([]string{t.head, t.location}, head(t.message, maxMessageLines)...),
			fieldLine("expected", t.expected), fieldLine("actual", t.actual), t.frame)...))
	}
	if crashed {
		if f, ok := parseCrash(lines); ok {
			out = append(out, f.Keys)
		}
	}
	return out
}

// jestDigest is each "●" block of jest's output.
func jestDigest(lines []string) [][]string {
	var out [][]string
	for i, l := range lines {
		if !jestHeadRe.MatchString(l) || len(out) == maxFailures {
			continue
		}
		if body := jestBody(lines[i+1:]); len(body) > 0 {
			out = append(out, append([]string{strings.TrimSpace(l)}, body...))
		}
	}
	return out
}

// specDigest is each failing test of the spec reporter, once: the
// reporter lists the failures again at the end.
func specDigest(lines []string) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for i, l := range lines {
		v := strings.TrimSpace(l)
		if !specFailRe.MatchString(l) || seen[v] || len(out) == maxFailures {
			continue
		}
		seen[v] = true
		blk := []string{v}
		for _, m := range lines[i+1:] {
			m = strings.TrimSpace(m)
			if strings.HasPrefix(m, "at ") {
				if userFrame(m) {
					blk = append(blk, m)
					break
				}
				continue
			}
			if specFailRe.MatchString(m) || strings.HasPrefix(m, "ℹ") || m == "}" || len(blk) > maxMessageLines {
				break
			}
			if m != "" {
				blk = append(blk, m)
			}
		}
		// A suite's line has no message: its tests have theirs.
		if len(blk) > 1 {
			out = append(out, blk)
		}
	}
	return out
}

func head(ss []string, n int) []string { return ss[:min(len(ss), n)] }
