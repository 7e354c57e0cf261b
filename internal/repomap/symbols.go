package repomap

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/workspace"
)

// Symbol is one top-level declaration of a file, or a member of a
// top-level class (lang.Symbol, which a language's extractor returns).
type Symbol = lang.Symbol

// maxSymbolText bounds one symbol's line in the map.
const maxSymbolText = 140

// extract returns the symbols of every file it knows a language for, by
// path, and names the extractors it used. Go files are read with go/ast;
// other languages with Universal Ctags when ctags is usable, else Python
// with the built-in extractor.
func extract(ctx context.Context, files []workspace.File, ctags string, extractors map[string]Extractor) (map[string][]Symbol, []string, error) {
	if extractors == nil {
		extractors = map[string]Extractor{".go": GoExtractor}
	}
	out := map[string][]Symbol{}
	var others []workspace.File
	var used []string
	for _, f := range files {
		if x, ok := extractors[path.Ext(f.Path)]; ok {
			out[f.Path] = x.Symbols(f.Path, f.Data)
			if !slices.Contains(used, x.Name) {
				used = append(used, x.Name)
			}
		} else if ctagsLanguage(f.Path) {
			others = append(others, f)
		}
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
