package tools

import (
	"regexp"
	"strings"
	"testing"
)

func TestFileFilter(t *testing.T) {
	tests := []struct {
		expr, data string
		skip       bool
	}{
		{"discount", "x = apply_discount(1)\n", false},
		{"discount", "nothing here\n", true},
		{"(?i)discount", "DisCount\n", false},
		{"(?i)discount", "dis count\n", true},
		{"(?i)kelvin", "\u212aelvin\n", false}, // the Kelvin sign folds onto k
		{"(?i)s", "\u017f\n", false},           // so does the long s onto s
		{`def \w+\(`, "def f(x):\n", false},
		{`def \w+\(`, "class C:\n", true},
		{`^import`, "x = 1\nimport os\n", false}, // ^ holds at each line
		{`os$`, "import os\nx = 1\n", false},
		{`\Aimport`, "x = 1\nimport os\n", false}, // \A holds at each line when matched per line
		{`(?-m)^import`, "x = 1\nimport os\n", false},
		{`\A\d`, "x\n5\n", false}, // no literal: the multi-line pass must not judge \A
		{`(?-m)^\d`, "x\n5\n", false},
		{`x(abc)*y`, "xy\n", false}, // a starred literal is not required
		{"a+b", "xaab\n", false},
		{"a{2}b", "xyz\n", true},
		{"(ab)|(cd)", "cd\n", false},
	}
	for _, tt := range tests {
		if got := fileFilter(tt.expr)([]byte(tt.data)); got != tt.skip {
			t.Errorf("filter %q skips %q = %v, want %v", tt.expr, tt.data, got, tt.skip)
		}
	}
}

// FuzzFileFilter checks that the filter never skips a file holding a line
// the expression matches.
func FuzzFileFilter(f *testing.F) {
	f.Add("(?i)discount", "DISCOUNT\n")
	f.Add(`\Ax`, "a\nx\n")
	f.Add("(?i)ks", "\u212a\u017f")
	f.Add(`^\s*$`, "a\n\n")
	f.Fuzz(func(t *testing.T, expr, data string) {
		re, err := regexp.Compile(expr)
		if err != nil || !fileFilter(expr)([]byte(data)) {
			return
		}
		for _, line := range strings.Split(data, "\n") {
			if re.MatchString(line) {
				t.Fatalf("filter skipped %q, whose line %q matches %q", data, line, expr)
			}
		}
	})
}
