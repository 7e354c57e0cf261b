package tools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

type writeArgs struct {
	Path    string `json:"path" desc:"file path relative to the workspace root; parent directories are created"`
	Content string `json:"content" desc:"the whole new content of the file"`
}

var writeTool = newTool("write", "Create a file or replace its whole content.", false,
	func(c *call, a *writeArgs) Result {
		p, res, ok := c.writable("write", a.Path)
		if !ok {
			return res
		}
		f := workspace.File{Path: p, Data: []byte(a.Content)}
		verb := "created"
		if i, ok := c.find(p); ok {
			f.Mode = c.files[i].Mode // replacing keeps an executable executable
			verb = "replaced"
		}
		files, res, ok := c.put("write", f)
		if !ok {
			return res
		}
		return Result{
			Text:    fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, p, len(a.Content), len(splitLines(a.Content))),
			Files:   files,
			Changed: []string{p},
		}
	})

type deleteArgs struct {
	Path string `json:"path" desc:"file path relative to the workspace root"`
}

var deleteTool = newTool("delete", "Delete a file.", false,
	func(c *call, a *deleteArgs) Result {
		f, res, ok := c.existing("delete", a.Path)
		if !ok {
			return res
		}
		i, _ := c.find(f.Path)
		// Non-nil even when empty: a nil Files means nothing changed.
		files := append(make([]workspace.File, 0, len(c.files)), c.files[:i]...)
		files = append(files, c.files[i+1:]...)
		return Result{Text: fmt.Sprintf("deleted %s", f.Path), Files: files, Changed: []string{f.Path}}
	})

type editArgs struct {
	Path    string `json:"path" desc:"file path relative to the workspace root"`
	OldText string `json:"old_text" desc:"text to replace, copied exactly from the file (whitespace included, line numbers left out); it must occur exactly once, so include enough surrounding lines"`
	NewText string `json:"new_text" desc:"text to put in its place"`
}

var editTool = newTool("edit", "Replace one exact occurrence of old_text in a file with new_text. If old_text is not found the closest region is shown; if it occurs more than once the lines are listed.", false,
	func(c *call, a *editArgs) Result {
		f, res, ok := c.existing("edit", a.Path)
		if !ok {
			return res
		}
		if isBinary(f.Data) {
			return failf("edit: %s is a binary file", f.Path)
		}
		if a.OldText == "" {
			return failf("edit: old_text is empty; to create or replace a whole file use write")
		}
		if a.OldText == a.NewText {
			return failf("edit: old_text and new_text are the same; nothing would change")
		}
		text := string(f.Data)
		at := occurrences(text, a.OldText, 10)
		switch len(at) {
		case 0:
			return failf("%s", nearMiss(f.Path, text, a.OldText))
		case 1:
		default:
			lines := make([]string, len(at))
			for i, off := range at {
				lines[i] = fmt.Sprint(lineAt(text, off))
			}
			more := ""
			if len(at) == 10 {
				more = " (and maybe more)"
			}
			return failf("edit: old_text occurs %d times in %s%s, starting on lines %s; include more surrounding lines so it matches exactly once",
				len(at), f.Path, more, strings.Join(lines, ", "))
		}
		off := at[0]
		updated := text[:off] + a.NewText + text[off+len(a.OldText):]
		f.Data = []byte(updated)
		files, res, ok := c.put("edit", f)
		if !ok {
			return res
		}
		first := lineAt(updated, off)
		last := lineAt(updated, off+max(len(a.NewText)-1, 0))
		return Result{
			Text: fmt.Sprintf("edited %s: old lines %d-%d are now lines %d-%d of %d:\n%s",
				f.Path, lineAt(text, off), lineAt(text, off+len(a.OldText)-1),
				first, last, len(splitLines(updated)), excerpt(updated, first-2, last+2, 40)),
			Files:   files,
			Changed: []string{f.Path},
		}
	})

// occurrences returns the offsets where sub starts in s, overlapping ones
// included (an overlap is as ambiguous as two separate matches), at most n.
func occurrences(s, sub string, n int) []int {
	var at []int
	for from := 0; len(at) < n; {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			break
		}
		at = append(at, from+i)
		from += i + 1
	}
	return at
}

// lineAt is the 1-based line holding byte offset off.
func lineAt(s string, off int) int {
	return strings.Count(s[:min(off, len(s))], "\n") + 1
}

// excerpt shows lines from..to (clamped) numbered as read shows them, at
// most n of them.
func excerpt(text string, from, to, n int) string {
	lines := splitLines(text)
	from, to = max(from, 1), min(to, len(lines), from+n-1)
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, clip(lines[i-1], maxReadLineBytes))
	}
	return b.String()
}

// writable cleans a path a change is about to create or replace.
func (c *call) writable(tool, p string) (string, Result, bool) {
	clean, err := workspace.CleanPath(strings.TrimPrefix(p, "./"))
	if err != nil {
		return "", failf("%s: %v", tool, err), false
	}
	if c.isDir(clean) {
		return "", failf("%s: %s is a directory", tool, clean), false
	}
	for dir := clean; ; {
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			break
		}
		dir = dir[:i]
		if _, ok := c.find(dir); ok {
			return "", failf("%s: cannot create %s: %s is a file, not a directory", tool, clean, dir), false
		}
	}
	return clean, Result{}, true
}

// put returns a copy of the files with f added or replaced, if the result
// stays within the workspace limits.
func (c *call) put(tool string, f workspace.File) ([]workspace.File, Result, bool) {
	i, found := c.find(f.Path)
	var files []workspace.File
	if found {
		files = slices.Clone(c.files)
		files[i] = f
	} else {
		files = slices.Concat(c.files[:i], []workspace.File{f}, c.files[i:])
	}
	if err := c.lim.Workspace.Check(files); err != nil {
		return nil, failf("%s: %v", tool, err), false
	}
	return files, Result{}, true
}
