package policy

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"path"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// goRule is what a denied Go construct is and why it is denied.
type goRule struct {
	category string
	why      string
}

var (
	spawns    = goRule{Process, "spawns processes"}
	networks  = goRule{Network, "opens network connections"}
	loadsCode = goRule{Dynamic, "loads code at run time"}
	unsafeUse = goRule{Native, "bypasses memory safety or calls the OS directly"}
)

// goImports are packages denied by import path.
var goImports = map[string]goRule{
	"os/exec":     spawns,
	"net":         networks,
	"net/http":    networks,
	"net/rpc":     networks,
	"net/smtp":    networks,
	"log/syslog":  networks,
	"plugin":      loadsCode,
	"unsafe":      unsafeUse,
	"syscall":     unsafeUse,
	"runtime/cgo": {Native, "links foreign code"},
	"C":           {Native, "links foreign code (cgo)"},
}

// goLocal are packages under a denied tree that only serve and call this
// machine: httptest's servers listen on loopback.
var goLocal = map[string]bool{"net/http/httptest": true}

// goImportPrefixes deny whole trees of packages.
var goImportPrefixes = []struct {
	prefix string
	rule   goRule
}{
	{"net/http/", networks},
	{"net/rpc/", networks},
	{"golang.org/x/net/", networks},
	{"golang.org/x/sys/", unsafeUse},
}

// goSelectors are package members denied wherever they are referenced, so a
// category stays denied when another category that covers the package is
// allowed (syscall.Exec is a process spawn even with native allowed).
var goSelectors = map[string]map[string]goRule{
	"os":                    {"StartProcess": spawns},
	"syscall":               {"Exec": spawns, "ForkExec": spawns, "StartProcess": spawns},
	"golang.org/x/sys/unix": {"Exec": spawns},
	"crypto/tls":            {"Dial": networks, "DialWithDialer": networks, "Listen": networks, "Dialer": networks},
}

// goWrite says which arguments of a call are paths it writes at; flagArg,
// when not -1, is an os.OpenFile flag argument that may make it a read.
type goWrite struct {
	pathArgs []int
	flagArg  int
}

var goWrites = map[string]map[string]goWrite{
	"os": {
		"Create": {[]int{0}, -1}, "WriteFile": {[]int{0}, -1}, "OpenFile": {[]int{0}, 1},
		"Mkdir": {[]int{0}, -1}, "MkdirAll": {[]int{0}, -1}, "MkdirTemp": {[]int{0}, -1},
		"CreateTemp": {[]int{0}, -1}, "Remove": {[]int{0}, -1}, "RemoveAll": {[]int{0}, -1},
		"Rename": {[]int{0, 1}, -1}, "Symlink": {[]int{1}, -1}, "Link": {[]int{1}, -1},
		"Chmod": {[]int{0}, -1}, "Chown": {[]int{0}, -1}, "Lchown": {[]int{0}, -1},
		"Chtimes": {[]int{0}, -1}, "Truncate": {[]int{0}, -1},
	},
	"io/ioutil": {
		"WriteFile": {[]int{0}, -1}, "TempFile": {[]int{0}, -1}, "TempDir": {[]int{0}, -1},
	},
}

// goPathBuilders return a path that starts with their first argument.
var goPathBuilders = map[string]map[string]bool{
	"path/filepath": {"Join": true, "Clean": true},
	"path":          {"Join": true, "Clean": true},
	"fmt":           {"Sprintf": true},
}

// CheckGo checks the .go files the changes judge and returns the findings
// on the attempt's lines, sorted by file and line. A file that does not
// parse yields a "syntax" finding for its first error (its partial syntax
// tree is still checked); the error is only for a file whose path is
// unsafe. Test files open no network findings: the sandbox has no network,
// so a test can only serve and call this machine (CheckLines still names
// another host a test calls).
func CheckGo(files []workspace.File, rules Rules, changes Changes) ([]Finding, error) {
	var out []Finding
	for _, f := range files {
		if !strings.HasSuffix(f.Path, ".go") || !changes.Judges(f.Path) {
			continue
		}
		if _, err := workspace.CleanPath(f.Path); err != nil {
			return nil, fmt.Errorf("check go: %w", err)
		}
		fileRules := rules
		if isTest(f.Path) {
			fileRules, _ = rules.Allow(Network)
		}
		findings, uses := checkGoFile(f, fileRules)
		out = append(out, findings...)
		for _, u := range uses {
			// A use counts only where its import is the user's: otherwise
			// the import's own finding says it all, once.
			if !changes.judgesLine(f.Path, u.importLine) {
				out = append(out, u.Finding)
			}
		}
	}
	out = changes.Keep(out)
	sortFindings(out)
	return out, nil
}

// goUse is a use of a denied package's member, with the line of its import.
type goUse struct {
	Finding
	importLine int
}

func checkGoFile(f workspace.File, rules Rules) ([]Finding, []goUse) {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, f.Path, f.Data, parser.ParseComments|parser.SkipObjectResolution)
	c := &goChecker{
		fset:        fset,
		path:        f.Path,
		rules:       rules,
		imports:     map[string]string{},
		importLines: map[string]int{},
		values:      map[string][]ast.Expr{},
		seen:        map[goKey]bool{},
		seenUse:     map[goKey]bool{},
	}
	if err != nil {
		// Only the first error: the parser's later ones mostly follow from it.
		var list scanner.ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			return []Finding{{File: f.Path, Rule: RuleSyntax, Message: err.Error()}}, nil
		}
		c.findings = append(c.findings, Finding{File: f.Path, Line: list[0].Pos.Line, Rule: RuleSyntax, Message: list[0].Msg})
	}
	if file != nil {
		c.check(file)
	}
	return c.findings, c.uses
}

type goKey struct {
	line int
	rule string
}

type goChecker struct {
	fset        *token.FileSet
	path        string
	rules       Rules
	imports     map[string]string     // local name -> import path
	importLines map[string]int        // import path -> its line
	dots        []string              // import paths imported with "."
	values      map[string][]ast.Expr // names -> expressions assigned to them
	seen        map[goKey]bool        // one finding per line and rule
	seenUse     map[goKey]bool
	findings    []Finding
	uses        []goUse
}

func (c *goChecker) report(pos token.Pos, category, msg string) {
	if !c.rules.Denies(category) {
		return
	}
	line := c.fset.Position(pos).Line
	if k := (goKey{line, category}); !c.seen[k] {
		c.seen[k] = true
		c.findings = append(c.findings, Finding{File: c.path, Line: line, Rule: category, Message: msg})
	}
}

func (c *goChecker) check(file *ast.File) {
	for _, spec := range file.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue // the parser has reported it
		}
		if r, ok := importRule(p); ok {
			c.report(spec.Pos(), r.category, fmt.Sprintf("import %q %s", p, r.why))
			c.importLines[p] = c.fset.Position(spec.Pos()).Line
		}
		switch {
		case spec.Name == nil:
			c.imports[path.Base(p)] = p
		case spec.Name.Name == ".":
			c.dots = append(c.dots, p)
		case spec.Name.Name != "_":
			c.imports[spec.Name.Name] = p
		}
	}
	for _, cg := range file.Comments {
		for _, cm := range cg.List {
			if strings.HasPrefix(cm.Text, "//go:linkname") {
				c.report(cm.Pos(), Native, "//go:linkname reaches unexported runtime symbols")
			}
		}
	}
	ast.Inspect(file, c.collectValue)
	ast.Inspect(file, c.visit)
}

func importRule(p string) (goRule, bool) {
	if goLocal[p] {
		return goRule{}, false
	}
	if r, ok := goImports[p]; ok {
		return r, true
	}
	for _, e := range goImportPrefixes {
		if strings.HasPrefix(p, e.prefix) {
			return e.rule, true
		}
	}
	return goRule{}, false
}

// collectValue records the expressions assigned to names, in any scope, so
// that a path held in a constant or variable is still seen as literal.
func (c *goChecker) collectValue(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.ValueSpec:
		if len(n.Names) == len(n.Values) {
			for i, name := range n.Names {
				c.values[name.Name] = append(c.values[name.Name], n.Values[i])
			}
		}
	case *ast.AssignStmt:
		if len(n.Lhs) == len(n.Rhs) {
			for i, lhs := range n.Lhs {
				if id, ok := lhs.(*ast.Ident); ok {
					c.values[id.Name] = append(c.values[id.Name], n.Rhs[i])
				}
			}
		}
	}
	return true
}

func (c *goChecker) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.SelectorExpr:
		if pkg, name, ok := c.member(n); ok {
			c.checkMember(n.Pos(), pkg, name)
		}
	case *ast.CallExpr:
		pkg, name, ok := c.member(n.Fun)
		if !ok {
			return true
		}
		if _, isIdent := n.Fun.(*ast.Ident); isIdent {
			c.checkMember(n.Pos(), pkg, name) // dot imports: selectors never see these
		}
		c.checkWrite(n, pkg, name)
	}
	return true
}

// checkMember reports a denied member, and notes any use of a denied
// package: when only the attempt's lines are judged, a new exec.Command in
// a file whose import is the user's is still the attempt's doing.
func (c *goChecker) checkMember(pos token.Pos, pkg, name string) {
	if r, ok := goSelectors[pkg][name]; ok {
		c.report(pos, r.category, fmt.Sprintf("%s.%s %s", path.Base(pkg), name, r.why))
		return
	}
	r, ok := importRule(pkg)
	if !ok || !c.rules.Denies(r.category) {
		return
	}
	line := c.fset.Position(pos).Line
	if k := (goKey{line, r.category}); !c.seenUse[k] {
		c.seenUse[k] = true
		c.uses = append(c.uses, goUse{
			Finding:    Finding{File: c.path, Line: line, Rule: r.category, Message: fmt.Sprintf("%s.%s uses %q, which %s", path.Base(pkg), name, pkg, r.why)},
			importLine: c.importLines[pkg],
		})
	}
}

// member resolves pkg.Name, or Name from a dot import, to an import path.
func (c *goChecker) member(e ast.Expr) (pkg, name string, ok bool) {
	switch e := e.(type) {
	case *ast.SelectorExpr:
		x, isIdent := e.X.(*ast.Ident)
		if !isIdent {
			return "", "", false
		}
		p, imported := c.imports[x.Name]
		return p, e.Sel.Name, imported
	case *ast.Ident:
		for _, p := range c.dots {
			_, sel := goSelectors[p][e.Name]
			_, wr := goWrites[p][e.Name]
			_, pb := goPathBuilders[p][e.Name]
			if sel || wr || pb {
				return p, e.Name, true
			}
		}
	}
	return "", "", false
}

func (c *goChecker) checkWrite(call *ast.CallExpr, pkg, name string) {
	w, ok := goWrites[pkg][name]
	if !ok {
		return
	}
	if w.flagArg >= 0 && w.flagArg < len(call.Args) && c.readOnly(call.Args[w.flagArg]) {
		return
	}
	for _, i := range w.pathArgs {
		if i >= len(call.Args) {
			continue
		}
		if p, abs := c.absLiteral(call.Args[i], 0); abs {
			c.report(call.Pos(), AbsWrite, fmt.Sprintf("%s.%s writes to absolute path %q; write inside the working directory or t.TempDir()", path.Base(pkg), name, p))
			return
		}
	}
}

func (c *goChecker) readOnly(e ast.Expr) bool {
	if lit, ok := e.(*ast.BasicLit); ok {
		return lit.Kind == token.INT && lit.Value == "0"
	}
	pkg, name, ok := c.member(e)
	return ok && pkg == "os" && name == "O_RDONLY"
}

// maxValueDepth bounds the chase through names assigned from names.
const maxValueDepth = 8

// absLiteral reports whether e is a path that starts with a literal "/",
// returning that literal prefix.
func (c *goChecker) absLiteral(e ast.Expr, depth int) (string, bool) {
	if depth > maxValueDepth {
		return "", false
	}
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil && strings.HasPrefix(s, "/")
	case *ast.ParenExpr:
		return c.absLiteral(e.X, depth+1)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return c.absLiteral(e.X, depth+1)
		}
	case *ast.CallExpr:
		pkg, name, ok := c.member(e.Fun)
		if ok && goPathBuilders[pkg][name] && len(e.Args) > 0 {
			return c.absLiteral(e.Args[0], depth+1)
		}
	case *ast.Ident:
		for _, v := range c.values[e.Name] {
			if s, ok := c.absLiteral(v, depth+1); ok {
				return s, true
			}
		}
	}
	return "", false
}
