package repomap

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
)

// goSymbols lists a Go file's top-level declarations: functions and
// methods with their signatures, types, constants and variables. A file
// that does not parse yields what was parsed before the error.
func goSymbols(path string, src []byte) []Symbol {
	fset := token.NewFileSet()
	file, _ := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if file == nil {
		return nil
	}
	var out []Symbol
	print := func(node any) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, node); err != nil {
			return ""
		}
		return oneLine(b.String())
	}
	for _, decl := range file.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			kind, parent := "func", ""
			if d.Recv != nil && len(d.Recv.List) > 0 {
				kind, parent = "method", receiverType(d.Recv.List[0].Type)
			}
			sig := &ast.FuncDecl{Recv: d.Recv, Name: d.Name, Type: d.Type} // no body, no doc
			out = append(out, Symbol{Kind: kind, Name: d.Name.Name, Parent: parent, Line: fset.Position(d.Pos()).Line, Text: print(sig)})
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					out = append(out, Symbol{Kind: "type", Name: s.Name.Name, Line: fset.Position(s.Pos()).Line, Text: "type " + s.Name.Name + " " + typeSummary(s, print)})
				case *ast.ValueSpec:
					kind := d.Tok.String() // const or var
					for _, n := range s.Names {
						if n.Name == "_" {
							continue
						}
						out = append(out, Symbol{Kind: kind, Name: n.Name, Line: fset.Position(n.Pos()).Line, Text: kind + " " + n.Name})
					}
				}
			}
		}
	}
	return out
}

// typeSummary shows a struct or interface by its kind alone, and any other
// type by its definition.
func typeSummary(s *ast.TypeSpec, print func(any) string) string {
	eq := ""
	if s.Assign.IsValid() {
		eq = "= "
	}
	switch s.Type.(type) {
	case *ast.StructType:
		return eq + "struct"
	case *ast.InterfaceType:
		return eq + "interface"
	}
	return eq + print(s.Type)
}

// receiverType names a method's receiver type without pointer or type
// parameters.
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
