package tools

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

type listArgs struct {
	Pattern string `json:"pattern,omitempty" desc:"glob over workspace paths; ** matches any number of directories; a pattern without a slash matches at any depth (*.py) and a directory lists its tree (app/models); empty lists everything"`
}

var listTool = newTool("list", "List the workspace's files whose paths match a glob, sorted, with their sizes.", true,
	func(c *call, a *listArgs) Result {
		g, err := parseGlob(a.Pattern)
		if err != nil {
			return failf("list: %v", err)
		}
		var b strings.Builder
		shown, more := 0, 0
		for _, f := range c.files {
			if !g.match(f.Path) {
				continue
			}
			if shown == c.lim.ListEntries {
				more++
				continue
			}
			fmt.Fprintf(&b, "%s (%d bytes)\n", f.Path, len(f.Data))
			shown++
		}
		switch {
		case shown == 0:
			return Result{Text: fmt.Sprintf("no files match %q (the workspace has %d files)", a.Pattern, len(c.files))}
		case more > 0:
			fmt.Fprintf(&b, "[%d more files match; narrow the pattern to see them]\n", more)
		}
		return Result{Text: b.String()}
	})

type readArgs struct {
	Path      string `json:"path" desc:"file path relative to the workspace root"`
	StartLine int    `json:"start_line,omitempty" desc:"first line to show, counting from 1 (default 1)"`
	EndLine   int    `json:"end_line,omitempty" desc:"last line to show (default: as many as fit)"`
}

// maxReadLineBytes bounds one line of a read, so a minified file cannot
// fill a result with a single line.
const maxReadLineBytes = 2000

var readTool = newTool("read", "Read a file, or a range of its lines. Each line is shown as its number, a tab, and its text; the number and tab are not part of the file.", true,
	func(c *call, a *readArgs) Result {
		f, res, ok := c.existing("read", a.Path)
		if !ok {
			return res
		}
		if isBinary(f.Data) {
			return failf("read: %s is a binary file (%d bytes); it cannot be shown as text", f.Path, len(f.Data))
		}
		lines := splitLines(string(f.Data))
		start, end := max(a.StartLine, 1), a.EndLine
		if end <= 0 || end > len(lines) {
			end = len(lines)
		}
		if len(lines) == 0 {
			return Result{Text: fmt.Sprintf("%s is empty", f.Path)}
		}
		if start > len(lines) {
			return failf("read: start_line %d is past the end of %s, which has %d lines", start, f.Path, len(lines))
		}
		if start > end {
			return failf("read: start_line %d is after end_line %d", start, end)
		}
		// Leave room for the header and the footer inside the result bound.
		budget := c.lim.ResultBytes - 200
		var body strings.Builder
		last := start - 1
		for n := start; n <= end && n-start < c.lim.ReadLines; n++ {
			line := lines[n-1]
			if len(line) > maxReadLineBytes {
				line = line[:cutBack(line, maxReadLineBytes)] + fmt.Sprintf(" [… %d more bytes on this line]", len(line)-maxReadLineBytes)
			}
			entry := fmt.Sprintf("%6d\t%s\n", n, line)
			if body.Len()+len(entry) > budget && n > start {
				break
			}
			body.WriteString(entry)
			last = n
		}
		text := fmt.Sprintf("%s: lines %d-%d of %d\n%s", f.Path, start, last, len(lines), body.String())
		if last < end {
			text += fmt.Sprintf("[lines %d-%d not shown; read again with start_line=%d]\n", last+1, end, last+1)
		}
		return Result{Text: text}
	})

type searchArgs struct {
	Pattern    string `json:"pattern" desc:"Go regular expression (RE2 syntax) matched against each line"`
	Path       string `json:"path,omitempty" desc:"glob limiting the files searched, as for list (default: every file)"`
	IgnoreCase bool   `json:"ignore_case,omitempty" desc:"match letters of either case"`
}

var searchTool = newTool("search", "Search the workspace's text files for lines matching a regular expression; results are file:line: text.", true,
	func(c *call, a *searchArgs) Result {
		if a.Pattern == "" {
			return failf("search: pattern is empty")
		}
		expr := a.Pattern
		if a.IgnoreCase {
			expr = "(?i)" + expr
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return failf("search: bad regular expression: %v", err)
		}
		g, err := parseGlob(a.Path)
		if err != nil {
			return failf("search: %v", err)
		}
		skip := fileFilter(expr)
		var b strings.Builder
		shown, more, searched := 0, 0, 0
		moreFiles := map[string]bool{}
		for _, f := range c.files {
			if !g.match(f.Path) || isBinary(f.Data) {
				continue
			}
			searched++
			if skip(f.Data) {
				continue // no line can match: spare splitting the file
			}
			n := 0
			for line := range strings.Lines(string(f.Data)) {
				n++
				line = strings.TrimSuffix(line, "\n")
				if !re.MatchString(line) {
					continue
				}
				if shown == c.lim.SearchResults {
					more++
					moreFiles[f.Path] = true
					continue
				}
				fmt.Fprintf(&b, "%s:%d: %s\n", f.Path, n, clip(line, c.lim.LineBytes))
				shown++
			}
		}
		if shown == 0 {
			return Result{Text: fmt.Sprintf("no lines match %q in %d files searched", a.Pattern, searched)}
		}
		if more > 0 {
			fmt.Fprintf(&b, "[%d more matching lines in %d files not shown; narrow the pattern or the path]\n", more, len(moreFiles))
		}
		return Result{Text: b.String()}
	})

// existing looks up a file the model named, or explains why it cannot be.
func (c *call) existing(tool, p string) (workspace.File, Result, bool) {
	clean, err := workspace.CleanPath(strings.TrimPrefix(p, "./"))
	if err != nil {
		return workspace.File{}, failf("%s: %v", tool, err), false
	}
	if i, ok := c.find(clean); ok {
		return c.files[i], Result{}, true
	}
	if c.isDir(clean) {
		return workspace.File{}, failf("%s: %s is a directory; list it with pattern %q", tool, clean, clean), false
	}
	msg := fmt.Sprintf("%s: there is no file %s", tool, clean)
	if s := c.similarPaths(clean, 3); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	} else {
		msg += "; use list to see the files"
	}
	return workspace.File{}, failf("%s", msg), false
}

// isDir reports whether some file lies under p.
func (c *call) isDir(p string) bool {
	i, _ := c.find(p + "/")
	return i < len(c.files) && strings.HasPrefix(c.files[i].Path, p+"/")
}

// similarPaths suggests files the model may have meant: the same base name
// elsewhere first, then paths a few edits away.
func (c *call) similarPaths(p string, n int) []string {
	base := p[strings.LastIndexByte(p, '/')+1:]
	var out []string
	for _, f := range c.files {
		if len(out) < n && f.Path[strings.LastIndexByte(f.Path, '/')+1:] == base {
			out = append(out, f.Path)
		}
	}
	for _, f := range c.files {
		if len(out) >= n {
			break
		}
		if abs(len(f.Path)-len(p)) <= 3 && editDistance(f.Path, p, 3) <= 3 && !slices.Contains(out, f.Path) {
			out = append(out, f.Path)
		}
	}
	return out
}

func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8<<10)], 0) >= 0
}

// splitLines splits text into lines without their terminators; a final
// newline does not start another line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// clip shortens a line to n bytes with a marker.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:cutBack(s, n)] + "…"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// editDistance is the Levenshtein distance of a and b, or limit+1 once it
// is sure to exceed limit.
func editDistance(a, b string, limit int) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			best = min(best, cur[j])
		}
		if best > limit {
			return limit + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
