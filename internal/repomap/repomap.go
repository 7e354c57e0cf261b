// Package repomap builds the map of a repository that opens a model's
// work on it: the files most relevant to the task and the last failure,
// each with its top-level symbols, then the other files by name, within a
// token budget. A project small enough to read whole gets its files
// instead, so a small task costs no extra turns.
//
// Relevance is a sum of fixed points, each with a reason the map shows:
// a file named by the failure or given as failing, a path named in the
// task, symbols the failure or the task mention, words of the text in its
// path, and half the score of a related test or tested file.
package repomap

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Options tune Build. Zero fields take their defaults.
type Options struct {
	Query
	// TokenBudget bounds the map's text, counted as bytes/4 (default
	// DefaultTokenBudget).
	TokenBudget int
	// WholeBelow is the size in bytes under which a project's text files
	// are given whole (default 24 KiB); a negative value never does.
	WholeBelow int
	// Ctags is the ctags program: "" finds it on PATH, "-" never uses it.
	Ctags string
	// Extractors read the files of the languages that have their own, by
	// file name ending (".go"); the others go to ctags. nil: Go's.
	Extractors map[string]Extractor
}

// Extractor lists a file's top-level symbols: a language's own reader
// (lang.Language.Symbols), named for the map's notes ("go/ast").
type Extractor struct {
	Name    string
	Symbols func(path string, src []byte) []Symbol
}

// GoExtractor reads Go with go/ast.
var GoExtractor = Extractor{Name: "go/ast", Symbols: goSymbols}

// Defaults for Options. The map sits in a conversation's first message, so
// every turn of the step sends it again: a larger one costs that many
// tokens per turn, and the model can list and search for the rest. At 4096
// the tool loop's prompt tokens per solved task on the generated
// repository were half the whole-window prompt's; at 1536, a third or less
// (go test -run '^$' -bench ToolLoopTokens -benchtime 1x ./internal/e2e/).
const (
	DefaultTokenBudget = 1536
	DefaultWholeBelow  = 24 << 10
)

// Entry is one ranked file of a map.
type Entry struct {
	Path    string
	Score   int
	Reasons []string
	Symbols []Symbol
}

// Map is a built repository map.
type Map struct {
	Text       string
	Whole      bool     // Text holds the files themselves
	Entries    []Entry  // every file, most relevant first
	Detailed   int      // files shown with their symbols
	Listed     int      // files shown by name only
	Omitted    int      // files not shown
	Extractors []string // how symbols were found: go/ast, ctags, python fallback
}

// Tokens estimates the size of a text in model tokens.
func Tokens(text string) int { return (len(text) + 3) / 4 }

// Build maps files (in workspace order) for opts.
func Build(ctx context.Context, files []workspace.File, opts Options) (Map, error) {
	if opts.TokenBudget <= 0 {
		opts.TokenBudget = DefaultTokenBudget
	}
	if opts.WholeBelow == 0 {
		opts.WholeBelow = DefaultWholeBelow
	}
	text := files[:0:0]
	total := 0
	for _, f := range files {
		if bytes.IndexByte(f.Data[:min(len(f.Data), 8<<10)], 0) < 0 {
			text = append(text, f)
			total += len(f.Data)
		}
	}
	if total < opts.WholeBelow {
		return whole(text), nil
	}
	syms, used, err := extract(ctx, text, opts.Ctags, opts.Extractors)
	if err != nil {
		return Map{}, fmt.Errorf("repo map: %w", err)
	}
	rs := make([]*ranked, len(text))
	for i, f := range text {
		rs[i] = &ranked{path: f.Path, size: len(f.Data), symbols: syms[f.Path]}
		if isTest(f.Path) && strings.HasSuffix(f.Path, ".py") {
			rs[i].imports = pythonImports(f.Data)
		}
	}
	score(rs, opts.Query)
	slices.SortStableFunc(rs, func(a, b *ranked) int {
		if a.score != b.score {
			return b.score - a.score
		}
		// Unranked files: the shallow ones give the better overview.
		if da, db := strings.Count(a.path, "/"), strings.Count(b.path, "/"); da != db {
			return da - db
		}
		return strings.Compare(a.path, b.path)
	})
	m := render(rs, total, opts.TokenBudget*4)
	m.Extractors = used
	return m, nil
}

// whole gives a small project's files as they are.
func whole(files []workspace.File) Map {
	var b strings.Builder
	m := Map{Whole: true}
	for _, f := range files {
		fmt.Fprintf(&b, "```path=%s\n%s", f.Path, f.Data)
		if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
			b.WriteString("\n")
		}
		b.WriteString("```\n")
		m.Entries = append(m.Entries, Entry{Path: f.Path})
	}
	m.Text = b.String()
	return m
}

// listShare is the part of the budget kept for files shown by name, so the
// model learns the shape of the whole tree.
const listShare = 4

// render writes the map within budget bytes: ranked files with their
// symbols, then the rest by name grouped by directory, then a count of
// what did not fit.
func render(rs []*ranked, total, budget int) Map {
	m := Map{Entries: make([]Entry, len(rs))}
	for i, r := range rs {
		m.Entries[i] = Entry{Path: r.path, Score: r.score, Reasons: r.reasons, Symbols: r.symbols}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Repository map: %d files, %d KiB. The files most relevant to the task come first with their top-level symbols (line numbers in brackets); use the tools to read or search more.\n\n", len(rs), total>>10)
	listBudget := 0
	for _, r := range rs {
		listBudget += len(r.path) + 2
	}
	listBudget = min(listBudget, budget/listShare)
	detailBudget := budget - listBudget - b.Len()
	shown := make([]bool, len(rs))
	for i, r := range rs {
		room := detailBudget - b.Len()
		if r.score == 0 && len(fileBlock(r, -1)) > room {
			break // unranked files are listed by name instead
		}
		block := fileBlock(r, room) // a relevant file shows what fits of it
		if block == "" {
			continue
		}
		b.WriteString(block)
		shown[i] = true
		m.Detailed++
	}
	var rest []*ranked
	for i, r := range rs {
		if !shown[i] {
			rest = append(rest, r)
		}
	}
	if len(rest) > 0 {
		b.WriteString("\nOther files:\n")
	}
	for _, line := range dirLines(rest) {
		if b.Len()+len(line.text)+60 > budget {
			break
		}
		b.WriteString(line.text)
		m.Listed += line.files
	}
	if m.Omitted = len(rs) - m.Detailed - m.Listed; m.Omitted > 0 {
		fmt.Fprintf(&b, "[… %d more files not shown; use list to see them]\n", m.Omitted)
	}
	m.Text = b.String()
	return m
}

// fileBlock shows one file in at most max bytes (-1: no limit): its path,
// why it ranks, and its symbols with members indented under their class.
// When not all symbols fit, those the query names are kept first and the
// rest in order, and a note says how many are left out; when not even the
// path fits, the block is empty.
func fileBlock(r *ranked, max int) string {
	head := r.path
	if len(r.reasons) > 0 {
		head += "  (" + strings.Join(r.reasons, "; ") + ")"
	}
	head += "\n"
	lines := make([]string, len(r.symbols))
	size := len(head)
	for i, s := range r.symbols {
		indent := "  "
		if s.Parent != "" && s.Kind != "method" { // a Go method's line names its receiver
			indent = "    "
		}
		lines[i] = fmt.Sprintf("%s%s [%d]\n", indent, s.Text, s.Line)
		size += len(lines[i])
	}
	if max < 0 || size <= max {
		return head + strings.Join(lines, "")
	}
	const noteRoom = 40
	room := max - len(head) - noteRoom
	if room < 0 {
		return ""
	}
	keep := make([]bool, len(lines))
	kept := 0
	take := func(i int) {
		if !keep[i] && len(lines[i]) <= room {
			keep[i] = true
			room -= len(lines[i])
			kept++
		}
	}
	for i, s := range r.symbols {
		if r.named[s.Name] {
			take(i)
		}
	}
	for i := range lines {
		take(i)
	}
	var b strings.Builder
	b.WriteString(head)
	for i, l := range lines {
		if keep[i] {
			b.WriteString(l)
		}
	}
	fmt.Fprintf(&b, "  [… %d more symbols]\n", len(lines)-kept)
	return b.String()
}

type dirLine struct {
	text  string
	files int
}

// dirLines lists files by directory, one line each, in the order the
// directories first appear in rs.
func dirLines(rs []*ranked) []dirLine {
	var order []string
	byDir := map[string][]string{}
	for _, r := range rs {
		d := path.Dir(r.path)
		if _, ok := byDir[d]; !ok {
			order = append(order, d)
		}
		byDir[d] = append(byDir[d], path.Base(r.path))
	}
	out := make([]dirLine, len(order))
	for i, d := range order {
		prefix := d + "/: "
		if d == "." {
			prefix = "./: "
		}
		out[i] = dirLine{text: prefix + strings.Join(byDir[d], ", ") + "\n", files: len(byDir[d])}
	}
	return out
}
