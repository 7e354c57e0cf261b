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
// run, and code outside test functions (init functions, package
// variables and the helpers they may call) that reads os.Args or flags,
// or exits, can end or redirect the run before the tests. A file that
// does not parse cannot build, and fails the run by itself.
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
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
			if fn.Name.Name == "TestMain" {
				return "adds TestMain, which decides whether the user's tests run"
			}
			if isGoTestFunc(fn.Name.Name) {
				continue // runs after the flags are read, under the test runner
			}
		}
		if use := runControl(d, names); use != "" {
			return "uses " + use + " outside a test function, which can end or redirect the run before the tests"
		}
	}
	return ""
}

// isGoTestFunc reports a name go test runs as a test, benchmark, fuzz
// test or example.
func isGoTestFunc(name string) bool {
	for _, prefix := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
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
