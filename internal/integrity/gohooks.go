package integrity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// goTestHooks says how a new or changed Go test file takes over the test
// binary, or "" when it does not: a TestMain decides whether the tests
// run, and code that runs before them (init functions, package variables)
// and reads os.Args or flags, or exits, can end or redirect the run. A
// file that does not parse cannot build, and fails the run by itself.
func goTestHooks(p string, data []byte) string {
	f, err := parser.ParseFile(token.NewFileSet(), p, data, parser.SkipObjectResolution)
	if err != nil {
		return ""
	}
	names := map[string]string{} // local name of os, flag and syscall
	for _, imp := range f.Imports {
		pkg, _ := strconv.Unquote(imp.Path.Value)
		switch pkg {
		case "os", "flag", "syscall":
			name := pkg
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = pkg
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil {
				continue
			}
			switch d.Name.Name {
			case "TestMain":
				return "adds TestMain, which decides whether the user's tests run"
			case "init":
				if use := runControl(d, names); use != "" {
					return "adds an init function that uses " + use + " before the tests run"
				}
			}
		case *ast.GenDecl:
			if d.Tok == token.VAR {
				if use := runControl(d, names); use != "" {
					return "adds a package variable that uses " + use + " before the tests run"
				}
			}
		}
	}
	return ""
}

// runControl names the first use of os.Exit, os.Args, syscall.Exit or the
// flag package in n, or "".
func runControl(n ast.Node, names map[string]string) string {
	var use string
	ast.Inspect(n, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || use != "" {
			return use == ""
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch pkg := names[id.Name]; {
		case pkg == "flag",
			pkg == "os" && (sel.Sel.Name == "Exit" || sel.Sel.Name == "Args"),
			pkg == "syscall" && sel.Sel.Name == "Exit":
			use = strings.Join([]string{pkg, sel.Sel.Name}, ".")
		}
		return use == ""
	})
	return use
}
