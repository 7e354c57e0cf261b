package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

// ws builds a sorted file set from path, content pairs.
func ws(pairs ...string) []workspace.File {
	var files []workspace.File
	for i := 0; i < len(pairs); i += 2 {
		files = append(files, workspace.File{Path: pairs[i], Data: []byte(pairs[i+1])})
	}
	workspace.Sort(files)
	return files
}

// run calls a tool with arguments given as a Go value, failing the test on
// an internal error.
func run(t *testing.T, files []workspace.File, name string, args any, lim Limits) Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Call(files, name, raw, lim)
	if err != nil {
		t.Fatalf("%s: internal error: %v", name, err)
	}
	return r
}

// check asserts the outcome of a call: whether it is a model error and
// what its text must contain and must not contain.
type check struct {
	isErr   bool
	has     []string
	hasNot  []string
	changed bool
}

func (c check) verify(t *testing.T, r Result) {
	t.Helper()
	if r.IsError != c.isErr {
		t.Errorf("IsError = %v, want %v; text:\n%s", r.IsError, c.isErr, r.Text)
	}
	for _, s := range c.has {
		if !strings.Contains(r.Text, s) {
			t.Errorf("text lacks %q:\n%s", s, r.Text)
		}
	}
	for _, s := range c.hasNot {
		if strings.Contains(r.Text, s) {
			t.Errorf("text has %q:\n%s", s, r.Text)
		}
	}
	if (r.Files != nil) != c.changed {
		t.Errorf("files changed = %v, want %v", r.Files != nil, c.changed)
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"", "a/b/c.py", true},
		{"**", "a.py", true},
		{"*.py", "a.py", true},
		{"*.py", "deep/down/a.py", true},
		{"*.py", "a.go", false},
		{"app", "app/models.py", true},
		{"app/", "app/x/y.py", true},
		{"app", "lib/app/x.py", true}, // no slash: any depth
		{"app/models", "app/models/user.py", true},
		{"app/models", "lib/app/models/user.py", false}, // a slash anchors it
		{"app/*.py", "app/a.py", true},
		{"app/*.py", "app/sub/a.py", false},
		{"app/**/*.py", "app/a.py", true},
		{"app/**/*.py", "app/x/y/a.py", true},
		{"app/**/*.py", "lib/a.py", false},
		{"**/test_*.py", "tests/unit/test_x.py", true},
		{"./src/*.go", "src/a.go", true},
		{"src/**", "src/a/b", true},
		{"src/**", "srcx/a", false},
		{"**/**/**/x", "x", true},
		{"a/**/b/**/c", "a/q/b/r/s/c", true},
		{"a/**/b/**/c", "a/q/r/s/c", false},
	}
	for _, tt := range tests {
		g, err := parseGlob(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if got := g.match(tt.path); got != tt.want {
			t.Errorf("glob %q matches %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
	if _, err := parseGlob("a/[b"); err == nil {
		t.Error("a malformed glob parsed")
	}
}

func TestList(t *testing.T) {
	files := ws("app/models.py", "x = 1\n", "app/views.py", "", "tests/test_models.py", "", "README.md", "# r\n", "go/main.go", "")
	tests := []struct {
		name    string
		pattern string
		lim     Limits
		check
		lines int
	}{
		{"everything sorted with sizes", "", Limits{}, check{has: []string{"README.md (4 bytes)\napp/models.py (6 bytes)\napp/views.py (0 bytes)\ngo/main.go"}}, 5},
		{"glob at any depth", "*.py", Limits{}, check{has: []string{"app/models.py", "tests/test_models.py"}, hasNot: []string{"main.go"}}, 3},
		{"directory", "app", Limits{}, check{has: []string{"app/views.py"}, hasNot: []string{"tests/"}}, 2},
		{"capped with a note", "", Limits{ListEntries: 2}, check{has: []string{"[3 more files match"}, hasNot: []string{"go/main.go"}}, 3},
		{"no match", "*.rs", Limits{}, check{has: []string{`no files match "*.rs"`, "5 files"}}, 1},
		{"bad glob", "[", Limits{}, check{isErr: true, has: []string{"bad glob"}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, files, "list", listArgs{Pattern: tt.pattern}, tt.lim)
			tt.verify(t, r)
			if n := len(splitLines(r.Text)); n != tt.lines {
				t.Errorf("%d lines, want %d:\n%s", n, tt.lines, r.Text)
			}
		})
	}
}

func TestRead(t *testing.T) {
	var long strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&long, "line number %d\n", i)
	}
	files := ws(
		"app/models.py", "class User:\n    name = 'x'\n\ndef f():\n    return 1\n",
		"app/long.txt", long.String(),
		"blob.bin", "ab\x00cd",
		"empty.txt", "",
		"wide.txt", strings.Repeat("w", 5000)+"\nend\n",
		"lib/models.py", "",
	)
	tests := []struct {
		name string
		args readArgs
		lim  Limits
		check
	}{
		{"whole file numbered", readArgs{Path: "app/models.py"}, Limits{}, check{has: []string{
			"app/models.py: lines 1-5 of 5\n     1\tclass User:\n     2\t    name = 'x'\n     3\t\n     4\tdef f():\n     5\t    return 1\n"}}},
		{"range", readArgs{Path: "app/models.py", StartLine: 4, EndLine: 4}, Limits{}, check{has: []string{"lines 4-4 of 5\n     4\tdef f():\n"}, hasNot: []string{"return"}}},
		{"end past the end is clamped", readArgs{Path: "./app/models.py", StartLine: 5, EndLine: 99}, Limits{}, check{has: []string{"lines 5-5 of 5"}}},
		{"start past the end", readArgs{Path: "app/models.py", StartLine: 6}, Limits{}, check{isErr: true, has: []string{"start_line 6 is past the end", "5 lines"}}},
		{"start after end", readArgs{Path: "app/models.py", StartLine: 3, EndLine: 2}, Limits{}, check{isErr: true, has: []string{"after end_line"}}},
		{"missing file suggests same base name", readArgs{Path: "models.py"}, Limits{}, check{isErr: true, has: []string{"no file models.py", "did you mean app/models.py or lib/models.py?"}}},
		{"missing file suggests a near path", readArgs{Path: "app/model.py"}, Limits{}, check{isErr: true, has: []string{"did you mean app/models.py"}}},
		{"missing file with nothing near", readArgs{Path: "zzz/qqq.rs"}, Limits{}, check{isErr: true, has: []string{"use list"}}},
		{"directory", readArgs{Path: "app"}, Limits{}, check{isErr: true, has: []string{"app is a directory"}}},
		{"unsafe path", readArgs{Path: "../etc/passwd"}, Limits{}, check{isErr: true, has: []string{"leaves the workspace"}}},
		{"binary", readArgs{Path: "blob.bin"}, Limits{}, check{isErr: true, has: []string{"blob.bin is a binary file (5 bytes)"}}},
		{"empty", readArgs{Path: "empty.txt"}, Limits{}, check{has: []string{"empty.txt is empty"}}},
		{"line cap with continuation", readArgs{Path: "app/long.txt"}, Limits{ReadLines: 10}, check{has: []string{"lines 1-10 of 3000", "    10\tline number 10\n", "[lines 11-3000 not shown; read again with start_line=11]"}, hasNot: []string{"line number 11\n"}}},
		{"byte cap with continuation", readArgs{Path: "app/long.txt", StartLine: 100}, Limits{ResultBytes: 1000}, check{has: []string{"lines 100-", "read again with start_line="}, hasNot: []string{"bytes elided"}}},
		{"long line clipped", readArgs{Path: "wide.txt"}, Limits{}, check{has: []string{"[… 3000 more bytes on this line]", "     2\tend"}, hasNot: []string{strings.Repeat("w", 2001)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, files, "read", tt.args, tt.lim)
			tt.verify(t, r)
			if lim := tt.lim.withDefaults(); len(r.Text) > lim.ResultBytes {
				t.Errorf("result is %d bytes, over the limit %d", len(r.Text), lim.ResultBytes)
			}
		})
	}
}

func TestSearch(t *testing.T) {
	var many strings.Builder
	for i := range 50 {
		fmt.Fprintf(&many, "hit %d\n", i)
	}
	files := ws(
		"app/models.py", "class User:\n    def save(self):\n        return Save()\n",
		"app/many.txt", many.String(),
		"tests/test_models.py", "def test_save():\n    User().save()\n",
		"blob.bin", "save\x00",
		"wide.txt", "save "+strings.Repeat("x", 500)+"\n",
	)
	tests := []struct {
		name string
		args searchArgs
		lim  Limits
		check
	}{
		{"file:line: text", searchArgs{Pattern: `def \w+\(`}, Limits{}, check{has: []string{
			"app/models.py:2:     def save(self):\ntests/test_models.py:1: def test_save():\n"}}},
		{"path glob", searchArgs{Pattern: "save", Path: "tests"}, Limits{}, check{has: []string{"tests/test_models.py:2:"}, hasNot: []string{"app/"}}},
		{"ignore case", searchArgs{Pattern: "^\\s+return save", IgnoreCase: true}, Limits{}, check{has: []string{"app/models.py:3:"}}},
		{"case sensitive by default", searchArgs{Pattern: "return save"}, Limits{}, check{has: []string{"no lines match"}}},
		{"binary files skipped", searchArgs{Pattern: "save", Path: "*.bin"}, Limits{}, check{has: []string{"no lines match", "0 files searched"}}},
		{"capped count", searchArgs{Pattern: "^hit"}, Limits{SearchResults: 5}, check{has: []string{"app/many.txt:5: hit 4\n", "[45 more matching lines in 1 files not shown"}, hasNot: []string{"hit 5"}}},
		{"long lines clipped", searchArgs{Pattern: "^save x"}, Limits{LineBytes: 20}, check{has: []string{"wide.txt:1: save xxxxxxxxxxxxxxx…\n"}}},
		{"bad regexp", searchArgs{Pattern: "a(b"}, Limits{}, check{isErr: true, has: []string{"bad regular expression", "missing closing )"}}},
		{"empty pattern", searchArgs{}, Limits{}, check{isErr: true, has: []string{"pattern is empty"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.verify(t, run(t, files, "search", tt.args, tt.lim))
		})
	}
}

func TestWriteAndDelete(t *testing.T) {
	base := []workspace.File{
		{Path: "app/run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Path: "app/x.py", Data: []byte("x = 1\n")},
	}
	tests := []struct {
		name  string
		tool  string
		args  any
		lim   Limits
		paths []string // the file set afterwards, when it changed
		check
	}{
		{"create in a new directory", "write", writeArgs{Path: "lib/new.py", Content: "a\nb\n"}, Limits{},
			[]string{"app/run.sh", "app/x.py", "lib/new.py"}, check{changed: true, has: []string{"created lib/new.py (4 bytes, 2 lines)"}}},
		{"replace", "write", writeArgs{Path: "./app/x.py", Content: "x = 2\n"}, Limits{},
			[]string{"app/run.sh", "app/x.py"}, check{changed: true, has: []string{"replaced app/x.py"}}},
		{"path leaving the workspace", "write", writeArgs{Path: "../x.py"}, Limits{}, nil, check{isErr: true, has: []string{"leaves the workspace"}}},
		{"absolute path", "write", writeArgs{Path: "/etc/x"}, Limits{}, nil, check{isErr: true, has: []string{"absolute"}}},
		{"over a directory", "write", writeArgs{Path: "app"}, Limits{}, nil, check{isErr: true, has: []string{"app is a directory"}}},
		{"under a file", "write", writeArgs{Path: "app/x.py/y"}, Limits{}, nil, check{isErr: true, has: []string{"app/x.py is a file, not a directory"}}},
		{"over the file size limit", "write", writeArgs{Path: "big", Content: "12345"}, Limits{Workspace: workspace.Limits{MaxFileBytes: 4}}, nil,
			check{isErr: true, has: []string{"more than the limit of 4"}}},
		{"over the file count limit", "write", writeArgs{Path: "c"}, Limits{Workspace: workspace.Limits{MaxFiles: 2}}, nil,
			check{isErr: true, has: []string{"3 files"}}},
		{"delete", "delete", deleteArgs{Path: "app/x.py"}, Limits{}, []string{"app/run.sh"}, check{changed: true, has: []string{"deleted app/x.py"}}},
		{"delete a missing file", "delete", deleteArgs{Path: "app/y.py"}, Limits{}, nil, check{isErr: true, has: []string{"did you mean app/x.py"}}},
		{"delete a directory", "delete", deleteArgs{Path: "app"}, Limits{}, nil, check{isErr: true, has: []string{"directory"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(base)
			r := run(t, base, tt.tool, tt.args, tt.lim)
			tt.verify(t, r)
			if !slices.EqualFunc(before, base, func(a, b workspace.File) bool { return a.Path == b.Path && string(a.Data) == string(b.Data) }) {
				t.Error("the call modified its input")
			}
			if r.Files == nil {
				return
			}
			var got []string
			for _, f := range r.Files {
				got = append(got, f.Path)
			}
			if !slices.Equal(got, tt.paths) {
				t.Errorf("files afterwards %q, want %q", got, tt.paths)
			}
			if len(r.Changed) != 1 {
				t.Errorf("changed = %q", r.Changed)
			}
		})
	}
}

func TestWriteKeepsMode(t *testing.T) {
	files := []workspace.File{{Path: "run.sh", Mode: 0o755, Data: []byte("old")}}
	r := run(t, files, "write", writeArgs{Path: "run.sh", Content: "new"}, Limits{})
	if r.Files[0].Mode != 0o755 || string(r.Files[0].Data) != "new" {
		t.Errorf("after write: %+v", r.Files[0])
	}
}

func TestDeleteLastFile(t *testing.T) {
	r := run(t, ws("only.txt", "x"), "delete", deleteArgs{Path: "only.txt"}, Limits{})
	if r.Files == nil || len(r.Files) != 0 {
		t.Errorf("deleting the last file gave %#v; want an empty, non-nil set", r.Files)
	}
}

func TestCall(t *testing.T) {
	files := ws("a.txt", strings.Repeat("0123456789\n", 5000))
	tests := []struct {
		name string
		tool string
		args string
		check
	}{
		{"unknown tool", "rm", `{}`, check{isErr: true, has: []string{`no tool "rm"`, "list, read, search, write, edit, delete"}}},
		{"malformed JSON", "read", `{"path":`, check{isErr: true, has: []string{"bad arguments for read", "path (string, required)", "start_line (integer, optional)"}}},
		{"unknown argument", "read", `{"file":"a.txt"}`, check{isErr: true, has: []string{`unknown field "file"`}}},
		{"wrong type", "read", `{"path":"a.txt","start_line":"3"}`, check{isErr: true, has: []string{"bad arguments"}}},
		{"trailing data", "read", `{"path":"a.txt"} {}`, check{isErr: true, has: []string{"trailing data"}}},
		{"no arguments at all", "list", ``, check{has: []string{"a.txt"}}},
		{"result elided head and tail", "search", `{"pattern":"0"}`, check{has: []string{"a.txt:1: 0123456789", "bytes elided", "more matching lines"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Call(files, tt.tool, json.RawMessage(tt.args), Limits{ResultBytes: 600})
			if err != nil {
				t.Fatal(err)
			}
			tt.verify(t, r)
			if len(r.Text) > 600 {
				t.Errorf("result of %d bytes over the 600 limit", len(r.Text))
			}
		})
	}
	unsorted := []workspace.File{{Path: "b"}, {Path: "a"}}
	if _, err := Call(unsorted, "list", nil, Limits{}); err == nil {
		t.Error("unsorted files gave no internal error")
	}
}

func TestDefs(t *testing.T) {
	defs := Defs()
	names := map[string]bool{}
	for _, d := range defs {
		if names[d.Name] || d.Description == "" {
			t.Errorf("tool %q duplicated or undescribed", d.Name)
		}
		names[d.Name] = true
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back struct {
			Parameters struct {
				Type       string                       `json:"type"`
				Properties map[string]map[string]string `json:"properties"`
				Required   []string                     `json:"required"`
			} `json:"parameters"`
		}
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		if back.Parameters.Type != "object" {
			t.Errorf("%s: parameters type %q", d.Name, back.Parameters.Type)
		}
		for name, p := range back.Parameters.Properties {
			if p["type"] == "" || p["description"] == "" {
				t.Errorf("%s.%s: no type or description", d.Name, name)
			}
		}
		for _, req := range back.Parameters.Required {
			if _, ok := back.Parameters.Properties[req]; !ok {
				t.Errorf("%s: required %q is not a property", d.Name, req)
			}
		}
	}
	wantRequired := map[string][]string{"list": {}, "read": {"path"}, "search": {"pattern"}, "write": {"path", "content"}, "edit": {"path", "old_text", "new_text"}, "delete": {"path"}}
	for _, d := range defs {
		if got := d.Parameters["required"].([]string); !slices.Equal(got, wantRequired[d.Name]) {
			t.Errorf("%s requires %q, want %q", d.Name, got, wantRequired[d.Name])
		}
	}
	// Clients that convert a schema by type assertion (the googleai client
	// of langchaingo does) need plain maps and a []string of required names.
	for _, d := range defs {
		props, ok := d.Parameters["properties"].(map[string]any)
		if !ok {
			t.Fatalf("%s: properties are %T", d.Name, d.Parameters["properties"])
		}
		for name, p := range props {
			if _, ok := p.(map[string]any); !ok {
				t.Errorf("%s.%s is %T", d.Name, name, p)
			}
		}
	}
	for name, ro := range map[string]bool{"list": true, "read": true, "search": true, "write": false, "edit": false, "delete": false, "nope": false} {
		if ReadOnly(name) != ro {
			t.Errorf("ReadOnly(%q) = %v", name, !ro)
		}
	}
}

// A required argument left out, or given as null, is the model's mistake:
// the call is refused with the argument named, and nothing is written.
func TestRequiredArgumentsAreAskedFor(t *testing.T) {
	files := ws("a.py", "x = 1\n")
	cases := []struct {
		name string
		args string
		want check
	}{
		{"write", `{"path": "b.py"}`, check{isErr: true, has: []string{`"content" is missing`, "content (string, required)"}}},
		{"write", `{"path": "b.py", "content": null}`, check{isErr: true, has: []string{`"content" is missing`}}},
		{"write", `{"content": "y = 2\n"}`, check{isErr: true, has: []string{`"path" is missing`}}},
		{"edit", `{"path": "a.py", "old_text": "x = 1"}`, check{isErr: true, has: []string{`"new_text" is missing`}}},
		{"write", `{"path": "b.py", "content": ""}`, check{has: []string{"created b.py (0 bytes"}, changed: true}}, // empty on purpose
		{"list", `{}`, check{has: []string{"a.py"}}},                                                               // every argument optional
	}
	for _, c := range cases {
		r, err := Call(files, c.name, json.RawMessage(c.args), Limits{})
		if err != nil {
			t.Fatalf("%s %s: internal error: %v", c.name, c.args, err)
		}
		c.want.verify(t, r)
	}
}
