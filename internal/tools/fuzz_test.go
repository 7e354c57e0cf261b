package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

// FuzzEdit checks the edit contract on any file and any old and new text:
// an edit applies exactly when old_text occurs once, and then the file is
// the original with that one occurrence replaced; otherwise nothing changes
// and the model is told why, within the result bound.
func FuzzEdit(f *testing.F) {
	f.Add("a\nb\nc\n", "b\n", "B\n")
	f.Add("x = 1\r\ny = 2\r\n", "x = 1\ny", "z")
	f.Add("\tif x:\n\t\treturn 1\n", "    if x:\n        return 1\n", "pass")
	f.Add("aaaa", "aa", "b")
	f.Add("héllo\nwörld\n", "wörld", "")
	f.Fuzz(func(t *testing.T, file, old, new string) {
		// The arguments arrive as JSON, which carries only valid UTF-8.
		old, new = jsonString(t, old), jsonString(t, new)
		files := ws("f.txt", file)
		r := run(t, files, "edit", editArgs{Path: "f.txt", OldText: old, NewText: new}, Limits{ResultBytes: 4096})
		if len(r.Text) > 4096 {
			t.Fatalf("result of %d bytes", len(r.Text))
		}
		n := len(occurrences(file, old, 2))
		applies := old != "" && old != new && n == 1 && !isBinary([]byte(file))
		if r.IsError == applies {
			t.Fatalf("IsError = %v with %d occurrences of %q: %s", r.IsError, n, old, r.Text)
		}
		if r.IsError {
			if r.Files != nil {
				t.Fatal("a failed edit changed the files")
			}
			return
		}
		if got, want := string(r.Files[0].Data), strings.Replace(file, old, new, 1); got != want {
			t.Fatalf("file afterwards %q, want %q", got, want)
		}
		if string(files[0].Data) != file {
			t.Fatal("the edit modified its input")
		}
	})
}

func jsonString(t *testing.T, s string) string {
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzPath checks every path a model may send: a write either fails
// without a change or leaves a file set the workspace accepts (canonical,
// unique, inside the root), which read returns and delete undoes.
func FuzzPath(f *testing.F) {
	for _, p := range []string{"a.py", "./a.py", "dir/../a", "/etc/passwd", "a//b", "a/./b", "dir", "dir/x/y", "x\x00y", `a\b`, "", ".", "a/", "...", "~/.ssh/id"} {
		f.Add(p, "content\n")
	}
	base := ws("dir/x", "1", "top.txt", "2")
	f.Fuzz(func(t *testing.T, p, content string) {
		r := run(t, base, "write", writeArgs{Path: p, Content: content}, Limits{})
		run(t, base, "read", readArgs{Path: p}, Limits{})
		if r.IsError {
			if r.Files != nil {
				t.Fatal("a failed write changed the files")
			}
			return
		}
		if err := workspace.DefaultLimits.Check(r.Files); err != nil {
			t.Fatalf("write %q left files the workspace rejects: %v", p, err)
		}
		written := r.Changed[0]
		if strings.HasPrefix(written, "/") || slices.Contains(strings.Split(written, "/"), "..") {
			t.Fatalf("write %q wrote %q", p, written)
		}
		if !isBinary([]byte(content)) {
			got := run(t, r.Files, "read", readArgs{Path: written}, Limits{ResultBytes: 1 << 20})
			if got.IsError {
				t.Fatalf("read of written %q: %s", written, got.Text)
			}
		}
		if _, existed := (&call{files: base}).find(written); !existed {
			d := run(t, r.Files, "delete", deleteArgs{Path: written}, Limits{})
			if d.IsError || !slices.EqualFunc(d.Files, base, func(a, b workspace.File) bool { return a.Path == b.Path }) {
				t.Fatalf("delete of written %q: %s", written, d.Text)
			}
		}
	})
}

// FuzzGlob checks that any pattern either parses or is refused, and that
// matching never panics or backtracks without bound.
func FuzzGlob(f *testing.F) {
	f.Add("**/*.py", "a/b/c.py")
	f.Add("a/**/**/**/**/b", "a/x/y/z/w/v/u/t/c")
	f.Add("[", "x")
	f.Fuzz(func(t *testing.T, pattern, p string) {
		g, err := parseGlob(pattern)
		if err != nil {
			return
		}
		g.match(p)
	})
}
