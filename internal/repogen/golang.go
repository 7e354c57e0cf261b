package repogen

import (
	"fmt"
	"strings"
)

// golang writes a Go module under tools/ with its own go.mod, so the root
// stays a Python project.
func (g *gen) golang() {
	g.add("tools/go.mod", "module example.com/acme/tools\n\ngo 1.22\n")
	g.add("tools/cmd/acmectl/main.go", "// Command acmectl inspects Acme data files.\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"acmectl\")\n}\n")
	for p := range g.opts.GoPackages {
		pkg := nouns[p%len(nouns)] + "s"
		for f := range g.opts.GoFilesPerPackage {
			g.add(fmt.Sprintf("tools/internal/%s/%s_%d.go", pkg, verbs[f%len(verbs)], f), g.goFile(pkg))
		}
	}
}

func (g *gen) goFile(pkg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "package %s\n\nimport (\n\t\"fmt\"\n\t\"strings\"\n)\n", pkg)
	typ := camel(g.name())
	limit := "Max" + typ
	fmt.Fprintf(&b, "\n// %s bounds how many entries a %s holds.\nconst %s = %d\n", limit, typ, limit, 10+g.rng.IntN(90))
	fmt.Fprintf(&b, `
// %[1]s is a bounded list of named entries.
// %[2]s
type %[1]s struct {
	Name    string
	Entries []string
}

// Add appends an entry, failing when the list is full.
func (x *%[1]s) Add(entry string) error {
	if len(x.Entries) >= %[3]s {
		return fmt.Errorf("%%s is full", x.Name)
	}
	x.Entries = append(x.Entries, strings.TrimSpace(entry))
	return nil
}

// String lists the entries.
func (x %[1]s) String() string {
	return x.Name + ": " + strings.Join(x.Entries, ", ")
}
`, typ, g.filler(), limit)
	for range g.opts.FunctionsPerFile {
		name := camel(g.name())
		fmt.Fprintf(&b, `
// %[1]s combines two counts.
// %[2]s
func %[1]s(a, b int) int {
	total := a*%[3]d + b
	if total > %[4]d {
		total -= %[5]d
	}
	return total
}
`, name, g.filler(), 2+g.rng.IntN(9), 50+g.rng.IntN(200), 1+g.rng.IntN(40))
	}
	return b.String()
}
