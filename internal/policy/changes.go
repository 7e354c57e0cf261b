package policy

import (
	"bytes"
	"path"
	"slices"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/workspace"
)

// Span is a run of lines, 1-based and inclusive.
type Span struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Changes say which code the policy judges: the lines an attempt added or
// changed, per file. The user's own code is never judged, even in a file
// the attempt changed elsewhere: a project's untouched __import__ is not
// the model's doing. The zero value judges every file whole (a task
// without a project of the user's).
type Changes struct {
	// files is nil when every file is judged whole; otherwise a file
	// absent is not judged and one with nil spans (new) is judged whole.
	files map[string][]Span
}

// AllChanged judges every file whole.
func AllChanged() Changes { return Changes{} }

// maxDiffCells bounds the line diff of one file (old lines times new
// lines left after the common head and tail); past it, every line between
// them counts as changed, which judges more code, never less.
const maxDiffCells = 1 << 22

// Diff returns the changes that turn before (the user's project) into
// after (an attempt's files).
func Diff(before, after []workspace.File) Changes {
	old := make(map[string][]byte, len(before))
	for _, f := range before {
		old[f.Path] = f.Data
	}
	c := Changes{files: map[string][]Span{}}
	for _, f := range after {
		prev, ok := old[f.Path]
		switch {
		case !ok:
			c.files[f.Path] = nil
		case !bytes.Equal(prev, f.Data):
			c.files[f.Path] = changedSpans(prev, f.Data)
		}
	}
	return c
}

// Judges reports whether a file is judged at all.
func (c Changes) Judges(file string) bool {
	if c.files == nil {
		return true
	}
	_, ok := c.files[file]
	return ok
}

// judgesLine reports whether a line of a judged file is the attempt's.
// Line 0 (unknown) counts as the attempt's.
func (c Changes) judgesLine(file string, line int) bool {
	if c.files == nil {
		return true
	}
	spans, ok := c.files[file]
	if !ok {
		return false
	}
	if spans == nil || line == 0 {
		return true
	}
	return slices.ContainsFunc(spans, func(s Span) bool { return s.From <= line && line <= s.To })
}

// Keep returns the findings the changes are answerable for: those on
// lines the attempt added or changed, and syntax errors of any file it
// touched (a parser reports an unclosed bracket far from where it opened).
func (c Changes) Keep(findings []Finding) []Finding {
	var out []Finding
	for _, f := range findings {
		if (f.Rule == RuleSyntax && c.Judges(f.File)) || c.judgesLine(f.File, f.Line) {
			out = append(out, f)
		}
	}
	return out
}

// spans returns the judged spans of a judged file for the Python checker:
// nil judges it whole, an empty list none of its lines.
func (c Changes) spans(file string) []Span {
	if c.files == nil {
		return nil
	}
	s := c.files[file]
	if s == nil {
		return nil
	}
	return s
}

// isTest reports a file of the tests, by the conventions the test guard
// uses, and conftest.py, where pytest fixtures start local servers.
func isTest(p string) bool {
	return integrity.IsTestFile(p) || path.Base(p) == "conftest.py"
}

// changedSpans returns the lines of after that a line diff against before
// marks as added or changed; a deletion alone marks none.
func changedSpans(before, after []byte) []Span {
	a, b := splitLines(before), splitLines(after)
	head := 0
	for head < len(a) && head < len(b) && bytes.Equal(a[head], b[head]) {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && bytes.Equal(a[len(a)-1-tail], b[len(b)-1-tail]) {
		tail++
	}
	a, b = a[head:len(a)-tail], b[head:len(b)-tail]
	if len(b) == 0 {
		return []Span{}
	}
	changed := make([]bool, len(b))
	if len(a)*len(b) > maxDiffCells {
		for i := range changed {
			changed[i] = true
		}
	} else {
		markUnmatched(a, b, changed)
	}
	spans := []Span{}
	for i, ch := range changed {
		if !ch {
			continue
		}
		line := head + i + 1
		if n := len(spans); n > 0 && spans[n-1].To == line-1 {
			spans[n-1].To = line
		} else {
			spans = append(spans, Span{line, line})
		}
	}
	return spans
}

// markUnmatched marks the lines of b outside a longest common subsequence
// of a and b.
func markUnmatched(a, b [][]byte, changed []bool) {
	w := len(b) + 1
	lcs := make([]int32, (len(a)+1)*w) // lcs[i*w+j]: of a[i:] and b[j:]
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if bytes.Equal(a[i], b[j]) {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for j < len(b) {
		switch {
		case i < len(a) && bytes.Equal(a[i], b[j]):
			i, j = i+1, j+1
		case i < len(a) && lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			i++
		default:
			changed[j] = true
			j++
		}
	}
}

func splitLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	return bytes.SplitAfter(data, []byte("\n"))
}
