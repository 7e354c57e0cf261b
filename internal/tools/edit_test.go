package tools

import (
	"strings"
	"testing"
)

func TestEdit(t *testing.T) {
	src := "def total(items):\n" +
		"    s = 0\n" +
		"    for it in items:\n" +
		"        s += it.price\n" +
		"    return s\n" +
		"\n" +
		"def count(items):\n" +
		"    return len(items)\n"
	tabbed := "func f() {\n\tx := 1\n\treturn x\n}\n"
	tests := []struct {
		name     string
		file     string
		old, new string
		want     string // the file afterwards, when the edit applies
		check
	}{
		{"single exact match", src, "        s += it.price\n", "        s += it.price * it.qty\n",
			strings.Replace(src, "it.price\n", "it.price * it.qty\n", 1),
			check{changed: true, has: []string{"edited a.py: old lines 4-4 are now lines 4-4 of 8:", "     4\t        s += it.price * it.qty\n", "     2\t    s = 0"}}},
		{"insert more lines", src, "    return s\n", "    # sum\n    return s\n",
			strings.Replace(src, "    return s\n", "    # sum\n    return s\n", 1),
			check{changed: true, has: []string{"old lines 5-5 are now lines 5-6 of 9"}}},
		{"delete text", src, "\ndef count(items):\n    return len(items)\n", "", "def total(items):\n    s = 0\n    for it in items:\n        s += it.price\n    return s\n",
			check{changed: true}},
		{"two matches give their lines", src, "(items):\n", "(xs):\n", "",
			check{isErr: true, has: []string{"occurs 2 times in a.py", "lines 1, 7", "more surrounding lines"}}},
		{"overlapping matches are ambiguous", "aaa\n", "aa", "b", "",
			check{isErr: true, has: []string{"occurs 2 times"}}},
		{"indentation near miss", src, "  for it in items:\n      s += it.price\n", "x", "",
			check{isErr: true, has: []string{"not found in a.py", "closest region is lines 3-4", "only in whitespace", "line 3 (indentation)", `the file has "    for it in items:"`}}},
		{"tabs versus spaces", tabbed, "    x := 1\n    return x\n", "\tx := 2\n\treturn x\n", "",
			check{isErr: true, has: []string{"lines 2-3", "tabs versus spaces"}}},
		{"trailing whitespace", src, "    s = 0  \n", "    s = 1\n", "",
			check{isErr: true, has: []string{"line 2 (trailing whitespace)"}}},
		{"CRLF in the file", "a = 1\r\nb = 2\r\n", "a = 1\nb = 2\n", "a = 3\n", "",
			check{isErr: true, has: []string{"only in whitespace", "line ending"}}},
		{"changed text shows which lines", src, "    s = 0\n    for item in items:\n        s += item.price\n", "x", "",
			check{isErr: true, has: []string{"closest region is lines 2-4", "Lines whose text differs: 3, 4."}, hasNot: []string{"only in whitespace"}}},
		{"nothing similar", src, "class Unrelated(Base):\n    pass\n", "x", "",
			check{isErr: true, has: []string{"No region of the file resembles it"}, hasNot: []string{"closest region"}}},
		{"line numbers copied from read", src, "     2\t    s = 0\n     3\t    for it in items:\n", "x", "",
			check{isErr: true, has: []string{"line numbers from read; leave them out"}}},
		{"old longer than the file", "x = 1\n", "x = 1\ny = 2\nz = 3\n", "", "",
			check{isErr: true, has: []string{"closest region is lines 1-1"}}},
		{"empty old text", src, "", "x", "", check{isErr: true, has: []string{"old_text is empty", "use write"}}},
		{"no change", src, "s = 0", "s = 0", "", check{isErr: true, has: []string{"the same"}}},
		{"binary file", "a\x00b", "a", "c", "", check{isErr: true, has: []string{"binary"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, ws("a.py", tt.file), "edit", editArgs{Path: "a.py", OldText: tt.old, NewText: tt.new}, Limits{})
			tt.verify(t, r)
			if r.Files != nil && string(r.Files[0].Data) != tt.want {
				t.Errorf("file afterwards:\n%s\nwant:\n%s", r.Files[0].Data, tt.want)
			}
		})
	}
}

// The near miss must stay cheap on a large file with a long old_text.
func TestEditNearMissLargeFile(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		b.WriteString("    value_" + strings.Repeat("x", i%40) + " = compute(a, b, c)\n")
	}
	old := strings.Repeat("    something else entirely = 1\n", 500)
	r := run(t, ws("big.py", b.String()), "edit", editArgs{Path: "big.py", OldText: old, NewText: ""}, Limits{})
	if !r.IsError || !strings.Contains(r.Text, "not found") {
		t.Fatalf("got %s", r.Text)
	}
}
