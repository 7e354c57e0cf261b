// Package instructions finds a project's own instructions for coding
// agents and bounds them for a prompt. In each directory from the root down
// to the directories being worked on, AGENTS.md is read; where a directory
// has none, CLAUDE.md is read instead, and at the root
// .github/copilot-instructions.md after that. Files come root first and
// nearest last, so the most specific instructions are read last.
package instructions

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Names are the instruction files of one directory, in order of preference:
// the first present is read.
var Names = []string{"AGENTS.md", "CLAUDE.md"}

// rootFallback is read at the root when no name of Names is there.
const rootFallback = ".github/copilot-instructions.md"

// DefaultBudget keeps instructions to about two thousand tokens.
const DefaultBudget = 8 << 10

// Source is one instruction file that was read.
type Source struct {
	Path  string
	Bytes int // its size
	Shown int // how many of its bytes the text holds
}

// Truncated reports whether the budget cut this file short.
func (s Source) Truncated() bool { return s.Shown < s.Bytes }

// Set is the instructions found for some directories.
type Set struct {
	Text    string   // each file under a "### path" heading; empty if none
	Sources []Source // the files read, in the order of Text
}

// Paths names the files read, for status lines.
func (s Set) Paths() []string {
	out := make([]string, len(s.Sources))
	for i, src := range s.Sources {
		out[i] = src.Path
	}
	return out
}

// Find collects the instructions for work in dirs (directories, or files
// whose directory counts; the root is always included) within budget bytes
// of file content (0 means DefaultBudget). When they do not fit, each file
// gets a fair share (a file smaller than its share keeps all of it and
// leaves the rest to the others), and a cut file ends with a marker naming
// what is missing, so the model can read the rest.
func Find(files []workspace.File, dirs []string, budget int) Set {
	if budget <= 0 {
		budget = DefaultBudget
	}
	byPath := workspace.ByPath(files)
	var found []workspace.File
	for _, dir := range ancestors(dirs) {
		if f, ok := pick(byPath, dir); ok {
			found = append(found, f)
		}
	}
	shares := fairShares(found, budget)
	var set Set
	var b strings.Builder
	for i, f := range found {
		text := string(f.Data)
		shown := shares[i]
		if shown < len(text) {
			shown = cutAtLine(text, shown)
			text = text[:shown] + fmt.Sprintf("\n[… %d more bytes of %s not shown; read the file for the rest]", len(f.Data)-shown, f.Path)
		}
		fmt.Fprintf(&b, "### %s\n%s\n\n", f.Path, strings.TrimRight(text, "\n"))
		set.Sources = append(set.Sources, Source{Path: f.Path, Bytes: len(f.Data), Shown: shown})
	}
	set.Text = strings.TrimSuffix(b.String(), "\n")
	return set
}

// ancestors returns the root and every directory on the way to each of
// dirs, once each, shallow before deep, so nearer instructions come last.
// A file's path counts as a directory: no instructions live beneath it.
func ancestors(dirs []string) []string {
	seen := map[string]bool{".": true}
	out := []string{"."}
	for _, d := range dirs {
		d, err := workspace.CleanPath(strings.TrimPrefix(d, "./"))
		if err != nil {
			continue // the root, or a path outside the workspace: nothing nested to add
		}
		for ; d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			out = append(out, d)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		if da, db := depth(a), depth(b); da != db {
			return da - db
		}
		return strings.Compare(a, b)
	})
	return out
}

func depth(dir string) int {
	if dir == "." {
		return 0
	}
	return strings.Count(dir, "/") + 1
}

// pick returns the instruction file read for dir, if it has one.
func pick(byPath map[string]workspace.File, dir string) (workspace.File, bool) {
	names := Names
	if dir == "." {
		names = append(slices.Clone(Names), rootFallback)
	}
	for _, name := range names {
		f, ok := byPath[path.Join(dir, name)]
		if ok && len(bytes.TrimSpace(f.Data)) > 0 && bytes.IndexByte(f.Data, 0) < 0 {
			return f, true
		}
	}
	return workspace.File{}, false
}

// fairShares splits budget among files: in order of size, each takes what
// it needs up to an equal part of what is left.
func fairShares(files []workspace.File, budget int) []int {
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(files[a].Data) - len(files[b].Data) })
	shares := make([]int, len(files))
	left := budget
	for k, i := range order {
		share := min(len(files[i].Data), left/(len(files)-k))
		shares[i] = share
		left -= share
	}
	return shares
}

// cutAtLine shortens text to at most n bytes, at the last line break in
// its second half when there is one, and never inside a UTF-8 sequence.
func cutAtLine(text string, n int) int {
	if nl := strings.LastIndexByte(text[:n], '\n'); nl >= n/2 {
		return nl + 1
	}
	for n > 0 && n < len(text) && text[n]&0xC0 == 0x80 {
		n--
	}
	return n
}
