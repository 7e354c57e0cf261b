package modelout

import (
	"errors"
	"regexp"
	"strings"
)

// MaxPlanSteps caps a plan; later steps are dropped.
const MaxPlanSteps = 12

// ErrNoPlan reports text with no numbered steps.
var ErrNoPlan = errors.New(`no plan found: write the plan as a numbered list ("1. ...", "2. ...")`)

var (
	// "Step 3: do x", "### Step 3 - do x", "**Step 3.** do x"
	stepLine = regexp.MustCompile(`(?i)^[\s#>*_-]*step\s+(\d{1,3})\b\s*(?:\*\*|__)?\s*[.):\x{2013}\x{2014}-]?\s*(?:\*\*|__)?\s*(.*)$`)
	// "3. do x", "3) do x", "**3.** do x", "## 3. do x"
	numberedLine = regexp.MustCompile(`^([ \t]*)(?:[#>]+[ \t]*)?(?:\*\*|__)?(\d{1,3})[.)](?:\*\*|__)?[ \t]+(.*)$`)
)

type planItem struct {
	indent int
	text   string
	line   int
}

// ParsePlan extracts the steps of a numbered plan.
func ParsePlan(text string) ([]string, error) {
	lines := planLines(text)
	var steps, numbered []planItem
	outsideFences(lines, func(i int, line string) {
		if m := stepLine.FindStringSubmatch(line); m != nil {
			steps = append(steps, planItem{text: m[2], line: i})
		} else if m := numberedLine.FindStringSubmatch(line); m != nil {
			numbered = append(numbered, planItem{indent: indentWidth(m[1]), text: m[3], line: i})
		}
	})
	items := steps
	if len(items) == 0 {
		items = outermost(numbered)
	}
	var out []string
	for _, it := range items {
		s := cleanStep(it.text)
		if s == "" {
			// "### Step 2" with the description on the next line.
			s = cleanStep(nextProse(lines, it.line))
		}
		if s == "" {
			continue
		}
		out = append(out, s)
		if len(out) == MaxPlanSteps {
			break
		}
	}
	if len(out) == 0 {
		return nil, ErrNoPlan
	}
	return out, nil
}

func planLines(text string) []string {
	return strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
}

// outsideFences visits the lines that are not inside a fenced code block.
func outsideFences(lines []string, visit func(i int, line string)) {
	var fence string
	for i, line := range lines {
		if f, _, ok := openingFence(line); ok && fence == "" {
			fence = f
			continue
		}
		if fence != "" {
			if isClosingFence(line, fence) {
				fence = ""
			}
			continue
		}
		visit(i, line)
	}
}

// outermost keeps the least indented numbered items, dropping sub-lists.
func outermost(items []planItem) []planItem {
	if len(items) == 0 {
		return nil
	}
	low := items[0].indent
	for _, it := range items {
		low = min(low, it.indent)
	}
	var out []planItem
	for _, it := range items {
		if it.indent == low {
			out = append(out, it)
		}
	}
	return out
}

func indentWidth(ws string) int {
	n := 0
	for _, r := range ws {
		if r == '\t' {
			n += 4
		} else {
			n++
		}
	}
	return n
}

// nextProse returns the first non-blank line after line i, unless it is a
// fence, another step or the plan's packages line (ParsePackages).
func nextProse(lines []string, i int) string {
	for _, l := range lines[i+1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if _, _, ok := openingFence(l); ok || stepLine.MatchString(l) || numberedLine.MatchString(l) || packagesLine.MatchString(l) {
			return ""
		}
		return l
	}
	return ""
}

// cleanStep strips markdown emphasis and stray punctuation from a step.
func cleanStep(s string) string {
	// Bold is noise in a step; "__" stays inside words such as __init__.py.
	s = strings.TrimSpace(strings.ReplaceAll(s, "**", ""))
	for {
		t := strings.TrimSpace(strings.Trim(s, "*_"))
		t = strings.TrimSpace(strings.TrimLeft(t, ":-\u2013\u2014"))
		if t == s {
			break
		}
		s = t
	}
	return strings.Join(strings.Fields(s), " ")
}
