package tools

import (
	"encoding/json"
	"testing"

	"github.com/autocoder/autocoder/internal/repogen"
)

// BenchmarkTools times each tool on the generated repository (over 300
// files and 2 MiB), the figure a tool loop pays per call before any
// orchestration:
//
//	go test -run '^$' -bench Tools -benchtime 20x ./internal/tools/
func BenchmarkTools(b *testing.B) {
	r := repogen.Generate(repogen.Options{Seed: 1})
	calls := []struct {
		name string
		tool string
		args any
	}{
		{"list", "list", listArgs{Pattern: "*.py"}},
		{"read", "read", readArgs{Path: r.Bug.Path}},
		{"search", "search", searchArgs{Pattern: `def apply_\w+\(`}},
		{"search-ignore-case", "search", searchArgs{Pattern: "discount", IgnoreCase: true}},
		{"edit", "edit", editArgs{Path: r.Bug.Path, OldText: r.Bug.Buggy, NewText: r.Bug.Fixed}},
		{"edit-near-miss", "edit", editArgs{Path: r.Bug.Path, OldText: "  " + r.Bug.Buggy, NewText: r.Bug.Fixed}},
		{"write", "write", writeArgs{Path: "acme/new.py", Content: "x = 1\n"}},
	}
	for _, c := range calls {
		raw, err := json.Marshal(c.args)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := Call(r.Files, c.tool, raw, Limits{})
				if err != nil || (res.IsError && c.name != "edit-near-miss") {
					b.Fatalf("%v %s", err, res.Text)
				}
			}
		})
	}
}
