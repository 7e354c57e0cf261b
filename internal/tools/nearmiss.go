package tools

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// nearMiss explains an edit whose old_text is not in the file: it finds the
// region of the file most like old_text, line by line, shows it with line
// numbers, and says which of its lines differ only in whitespace, the
// mistake models make most.
func nearMiss(path, text, old string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "edit: old_text was not found in %s.", path)
	want := splitLines(old)
	if len(want) == 0 { // old_text is only a line break
		want = []string{""}
	}
	if lineNumbered(want) {
		b.WriteString(" old_text seems to start its lines with line numbers from read; leave them out.")
	}
	have := splitLines(text)
	start, score := closestRegion(have, want)
	if len(have) == 0 || score < 0.5 {
		b.WriteString(" No region of the file resembles it; read the file to see its current text.")
		return b.String()
	}
	end := min(start+len(want), len(have))
	fmt.Fprintf(&b, "\nThe closest region is lines %d-%d (%.0f%% similar):\n%s", start+1, end, score*100, excerpt(text, start+1, end, 40))
	var wsOnly, other []string
	for i := range end - start {
		h, w := have[start+i], want[i]
		switch {
		case h == w:
		case sameWords(h, w):
			wsOnly = append(wsOnly, fmt.Sprintf("line %d (%s): the file has %q, old_text has %q", start+i+1, whitespaceKind(h, w), h, w))
		default:
			other = append(other, fmt.Sprint(start+i+1))
		}
	}
	if len(wsOnly) > 0 {
		if len(other) == 0 {
			b.WriteString("It differs from old_text only in whitespace:\n")
		} else {
			b.WriteString("Lines differing only in whitespace:\n")
		}
		for _, s := range wsOnly[:min(len(wsOnly), 5)] {
			b.WriteString("  " + s + "\n")
		}
	}
	if len(other) > 0 {
		fmt.Fprintf(&b, "Lines whose text differs: %s.\n", strings.Join(other[:min(len(other), 20)], ", "))
	}
	b.WriteString("Copy old_text exactly from the file as it is now and try again.")
	return b.String()
}

var numberedLine = regexp.MustCompile(`^\s*\d+\t`)

// lineNumbered reports whether every non-empty line starts like a line of
// read's output.
func lineNumbered(lines []string) bool {
	n := 0
	for _, l := range lines {
		if l == "" {
			continue
		}
		if !numberedLine.MatchString(l) {
			return false
		}
		n++
	}
	return n > 0
}

// maxScoredLines bounds the work of closestRegion: a long old_text is
// compared on this many of its lines, spread evenly.
const maxScoredLines = 24

// closestRegion finds the window of len(want) lines of have most similar to
// want, line by line, and returns its start and its mean similarity.
func closestRegion(have, want []string) (int, float64) {
	k := min(len(want), len(have))
	step := max(1, k/maxScoredLines)
	wantShape := make([]lineShape, k)
	for i := 0; i < k; i += step {
		wantShape[i] = shapeOf(want[i])
	}
	haveShape := make([]*lineShape, len(have))
	best, bestScore := 0, -1.0
	for s := 0; s+k <= len(have); s++ {
		total, n := 0.0, 0
		for i := 0; i < k; i += step {
			j := s + i
			if haveShape[j] == nil {
				sh := shapeOf(have[j])
				haveShape[j] = &sh
			}
			total += similarity(have[j], want[i], *haveShape[j], wantShape[i])
			n++
		}
		if score := total / float64(max(n, 1)); score > bestScore {
			best, bestScore = s, score
		}
	}
	return best, bestScore
}

// lineShape is what similarity compares of a line, computed once per line.
type lineShape struct {
	words string   // the line with its whitespace collapsed
	grams []uint32 // sorted character pairs of words
}

func shapeOf(s string) lineShape {
	words := strings.Join(strings.Fields(s), " ")
	r := []rune(words)
	if len(r) == 1 {
		return lineShape{words, []uint32{uint32(r[0])}}
	}
	g := make([]uint32, 0, max(len(r)-1, 0))
	for i := 0; i+1 < len(r); i++ {
		g = append(g, uint32(r[i])*31+uint32(r[i+1])) // collisions only blur the score
	}
	slices.Sort(g)
	return lineShape{words, g}
}

// similarity is 1 for equal lines, just under 1 for lines equal but for
// whitespace, and otherwise the Dice coefficient of their character pairs.
func similarity(a, b string, sa, sb lineShape) float64 {
	switch {
	case a == b:
		return 1
	case sa.words == sb.words:
		return 0.95
	}
	return dice(sa.grams, sb.grams)
}

func dice(a, b []uint32) float64 {
	if len(a)+len(b) == 0 {
		return 1 // two blank lines
	}
	common := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			common++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}

// sameWords reports whether a and b differ only in whitespace.
func sameWords(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

// whitespaceKind names how two lines equal but for whitespace differ.
func whitespaceKind(a, b string) string {
	var kinds []string
	if strings.TrimRight(a, "\r") != a || strings.TrimRight(b, "\r") != b {
		kinds = append(kinds, "line ending")
		a, b = strings.TrimRight(a, "\r"), strings.TrimRight(b, "\r")
	}
	la, lb := leading(a), leading(b)
	switch {
	case la == lb:
	case strings.Contains(la, "\t") != strings.Contains(lb, "\t"):
		kinds = append(kinds, "tabs versus spaces in the indentation")
	default:
		kinds = append(kinds, "indentation")
	}
	if trailing(a) != trailing(b) {
		kinds = append(kinds, "trailing whitespace")
	}
	if strings.TrimSpace(a) != strings.TrimSpace(b) {
		kinds = append(kinds, "spacing inside the line")
	}
	return strings.Join(kinds, ", ")
}

func leading(s string) string  { return s[:len(s)-len(strings.TrimLeft(s, " \t"))] }
func trailing(s string) string { return s[len(strings.TrimRight(s, " \t")):] }
