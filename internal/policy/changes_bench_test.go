package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

// benchProject is n Python files of lines lines each.
func benchProject(n, lines int) []workspace.File {
	var files []workspace.File
	for i := range n {
		var b strings.Builder
		for j := range lines {
			fmt.Fprintf(&b, "def f%d_%d(a, b):\n    return a * %d + b\n", i, j, j)
		}
		files = append(files, workspace.File{Path: fmt.Sprintf("pkg/m%d.py", i), Data: []byte(b.String())})
	}
	return files
}

// BenchmarkJudgedLines is what judging only the attempt's lines costs a
// check on the host (the line diff and the line rules), for a one-line
// fix in a 40-file project of 2,000 lines a file and for the rewrite of
// one such file, every line of which differs:
//
//	go test -run '^$' -bench JudgedLines -benchtime 20x ./internal/policy/
func BenchmarkJudgedLines(b *testing.B) {
	before := benchProject(40, 1000)
	oneLine := append([]workspace.File(nil), before...)
	oneLine[7].Data = []byte(strings.Replace(string(oneLine[7].Data), "a * 500 + b", "a * 500 - b", 1))
	rewrite := append([]workspace.File(nil), before...)
	rewrite[7].Data = []byte(strings.ReplaceAll(string(rewrite[7].Data), "a *", "b *"))
	for _, bc := range []struct {
		name  string
		after []workspace.File
	}{{"one-line-fix", oneLine}, {"rewritten-file", rewrite}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c := Diff(before, bc.after)
				if _, err := CheckLines(bc.after, DefaultRules(), DefaultLineRules(), c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
