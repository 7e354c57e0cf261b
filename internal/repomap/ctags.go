package repomap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"

	"github.com/autocoder/autocoder/internal/workspace"
)

// ctagsExtensions are the file types handed to ctags; data and markup files
// (JSON, YAML, Markdown) would only add noise to a map of code.
var ctagsExtensions = map[string]bool{
	".py": true, ".js": true, ".mjs": true, ".cjs": true, ".jsx": true, ".ts": true, ".tsx": true,
	".rb": true, ".java": true, ".kt": true, ".scala": true, ".c": true, ".h": true, ".cc": true,
	".cpp": true, ".hpp": true, ".cs": true, ".rs": true, ".php": true, ".lua": true, ".sh": true,
	".pl": true, ".ex": true, ".exs": true, ".erl": true, ".hs": true, ".ml": true, ".jl": true, ".r": true,
}

func ctagsLanguage(p string) bool { return ctagsExtensions[strings.ToLower(path.Ext(p))] }

// ctagsKinds are the tag kinds a map shows; imports, locals and plain
// variables are left out.
var ctagsKinds = map[string]bool{
	"class": true, "function": true, "method": true, "member": true, "interface": true, "struct": true,
	"enum": true, "typedef": true, "type": true, "trait": true, "module": true, "constant": true,
	"singletonMethod": true, "implementation": true,
}

// memberScopes are the scopes whose members are shown under their parent.
var memberScopes = map[string]bool{"class": true, "struct": true, "interface": true, "trait": true, "module": true, "implementation": true}

var ctagsProbe sync.Map // program → bool: is it Universal Ctags with JSON output

// findCtags returns the ctags program to use: prog if given ("-" means
// none), else ctags from PATH; it must be Universal Ctags built with JSON
// output.
func findCtags(prog string) (string, bool) {
	if prog == "-" {
		return "", false
	}
	if prog == "" {
		p, err := exec.LookPath("ctags")
		if err != nil {
			return "", false
		}
		prog = p
	}
	if ok, seen := ctagsProbe.Load(prog); seen {
		return prog, ok.(bool)
	}
	out, err := exec.Command(prog, "--version").Output()
	ok := err == nil && bytes.Contains(out, []byte("Universal Ctags")) && bytes.Contains(out, []byte("+json"))
	ctagsProbe.Store(prog, ok)
	return prog, ok
}

type ctagsTag struct {
	Type      string `json:"_type"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	Pattern   string `json:"pattern"`
	Line      int    `json:"line"`
	Kind      string `json:"kind"`
	Scope     string `json:"scope"`
	ScopeKind string `json:"scopeKind"`
}

// ctagsSymbols runs ctags once over files, written to a temporary
// directory since ctags reads files from disk.
func ctagsSymbols(ctx context.Context, prog string, files []workspace.File) (map[string][]Symbol, error) {
	dir, err := os.MkdirTemp("", "repomap-")
	if err != nil {
		return nil, fmt.Errorf("ctags: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := workspace.WriteDir(dir, files); err != nil {
		return nil, fmt.Errorf("ctags: %w", err)
	}
	var list strings.Builder
	for _, f := range files {
		list.WriteString(f.Path + "\n")
	}
	// --options=NONE first: no option file is read, the workspace's .ctags.d
	// included (it can name host files and define parsers).
	cmd := exec.CommandContext(ctx, prog, "--options=NONE", "--output-format=json", "--sort=no", "--fields=+nS", "--extras=-fq", "-f", "-", "-L", "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(list.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ctags: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	syms := map[string][]Symbol{}
	lines := bufio.NewScanner(bytes.NewReader(out))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var t ctagsTag
		if err := json.Unmarshal(lines.Bytes(), &t); err != nil || t.Type != "tag" || !ctagsKinds[t.Kind] {
			continue // a line ctags could not encode is one symbol fewer, not a failed map
		}
		sym := Symbol{Kind: t.Kind, Name: t.Name, Line: t.Line, Text: patternText(t.Pattern, t.Kind, t.Name)}
		if t.Scope != "" {
			if !memberScopes[t.ScopeKind] || strings.ContainsAny(t.Scope, ".:") {
				continue // nested deeper than a member of a top-level class
			}
			sym.Parent = t.Scope
		}
		syms[t.Path] = append(syms[t.Path], sym)
	}
	return syms, lines.Err()
}

// patternText turns a tag's search pattern (/^source line$/) into the
// declaration's line, cut before a body that starts on the same line.
func patternText(pattern, kind, name string) string {
	s := strings.TrimPrefix(pattern, "/^")
	s = strings.TrimSuffix(strings.TrimSuffix(s, "/"), "$")
	s = strings.NewReplacer(`\/`, "/", `\\`, `\`).Replace(s)
	if i := strings.Index(s, "{"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRight(strings.TrimSpace(s), ":")
	if s == "" {
		s = kind + " " + name
	}
	return oneLine(s)
}
