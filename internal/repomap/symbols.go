package repomap

import (
	"context"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Symbol is one top-level declaration of a file, or a member of a
// top-level class.
type Symbol struct {
	Kind   string // func, method, type, const, var, class, function, member, ...
	Name   string
	Parent string // the class a member belongs to; empty at top level
	Line   int
	Text   string // one line as the map shows it, e.g. "func (s *Store) Put(key string) error"
}

// maxSymbolText bounds one symbol's line in the map.
const maxSymbolText = 140

// extract returns the symbols of every file it knows a language for, by
// path, and names the extractors it used. Go files are read with go/ast;
// other languages with Universal Ctags when ctags is usable, else Python
// with the built-in extractor.
func extract(ctx context.Context, files []workspace.File, ctags string) (map[string][]Symbol, []string, error) {
	out := map[string][]Symbol{}
	var others []workspace.File
	hasGo := false
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".go") {
			out[f.Path] = goSymbols(f.Path, f.Data)
			hasGo = true
		} else if ctagsLanguage(f.Path) {
			others = append(others, f)
		}
	}
	var used []string
	if hasGo {
		used = append(used, "go/ast")
	}
	if len(others) == 0 {
		return out, used, nil
	}
	if prog, ok := findCtags(ctags); ok {
		syms, err := ctagsSymbols(ctx, prog, others)
		if err != nil {
			return nil, nil, err
		}
		for p, s := range syms {
			out[p] = s
		}
		return out, append(used, "ctags"), nil
	}
	for _, f := range others {
		if strings.HasSuffix(f.Path, ".py") {
			out[f.Path] = pythonSymbols(f.Data)
		}
	}
	return out, append(used, "python fallback"), nil
}

// oneLine collapses a declaration to one bounded line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxSymbolText {
		cut := maxSymbolText
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
