package modelout

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

const f3 = "```"

func TestParseBlocks(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Block
	}{
		{"path attribute", f3 + "python path=app/main.py\nprint(1)\n" + f3,
			[]Block{{"app/main.py", "print(1)\n"}}},
		{"quoted title", f3 + `go title="cmd/x/main.go"` + "\npackage main\n" + f3,
			[]Block{{"cmd/x/main.go", "package main\n"}}},
		{"file attribute", f3 + "js file='web/app.js'\nx()\n" + f3, []Block{{"web/app.js", "x()\n"}}},
		{"bare path info", f3 + "app/main.py\nx = 1\n" + f3, []Block{{"app/main.py", "x = 1\n"}}},
		{"lang then path", f3 + "python app/util.py\nx = 1\n" + f3, []Block{{"app/util.py", "x = 1\n"}}},
		{"lang colon path", f3 + "python:app/util.py\nx = 1\n" + f3, []Block{{"app/util.py", "x = 1\n"}}},
		{"File: line", "Here you go.\n\nFile: app/main.py\n" + f3 + "python\nprint(2)\n" + f3,
			[]Block{{"app/main.py", "print(2)\n"}}},
		{"heading line with blank", "### app/main.py\n\n" + f3 + "python\nprint(3)\n" + f3,
			[]Block{{"app/main.py", "print(3)\n"}}},
		{"bold line", "**tests/test_main.py**\n" + f3 + "python\nassert True\n" + f3,
			[]Block{{"tests/test_main.py", "assert True\n"}}},
		{"bold File: with backticks", "**File: `pkg/a.go`**\n" + f3 + "go\npackage pkg\n" + f3,
			[]Block{{"pkg/a.go", "package pkg\n"}}},
		{"backticked name with colon", "`setup.cfg`:\n" + f3 + "\n[metadata]\n" + f3,
			[]Block{{"setup.cfg", "[metadata]\n"}}},
		{"Makefile", "File: Makefile\n" + f3 + "make\nall:\n\techo hi\n" + f3,
			[]Block{{"Makefile", "all:\n\techo hi\n"}}},
		{"canonical path", f3 + "python path=./app//main.py\nx\n" + f3, []Block{{"app/main.py", "x\n"}}},
		{"empty file", f3 + "python path=app/__init__.py\n" + f3, []Block{{"app/__init__.py", ""}}},
		{"untagged blocks ignored", "Run:\n" + f3 + "bash\npytest -q\n" + f3 + "\n" + f3 + "go path=a.go\npackage a\n" + f3,
			[]Block{{"a.go", "package a\n"}}},
		{"prose line is not a path", "Here is the code:\n" + f3 + "python\nx\n" + f3 + "\n" + f3 + "python path=b.py\ny\n" + f3,
			[]Block{{"b.py", "y\n"}}},
		{"several in order", f3 + "go path=b.go\nB\n" + f3 + "\ntext\n" + f3 + "go path=a.go\nA\n" + f3,
			[]Block{{"b.go", "B\n"}, {"a.go", "A\n"}}},
		{"nested fence kept whole", f3 + "markdown path=README.md\n# T\n" + f3 + "bash\nmake\n" + f3 + "\nend\n" + f3,
			[]Block{{"README.md", "# T\n" + f3 + "bash\nmake\n" + f3 + "\nend\n"}}},
		{"longer outer fence", "````markdown path=docs/x.md\n" + f3 + "\ncode\n" + f3 + "\n````",
			[]Block{{"docs/x.md", f3 + "\ncode\n" + f3 + "\n"}}},
		{"tilde fence", "~~~python path=t.py\n" + f3 + "\n~~~", []Block{{"t.py", f3 + "\n"}}},
		{"crlf", f3 + "python path=w.py\r\na\r\nb\r\n" + f3 + "\r\n", []Block{{"w.py", "a\nb\n"}}},
		{"indented fence", "1. Create it:\n   " + f3 + "python path=i.py\n   x\n   " + f3, []Block{{"i.py", "   x\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(out.Blocks, tt.want) || len(out.Edits) != 0 {
				t.Errorf("blocks = %q, edits = %q; want %q", out.Blocks, out.Edits, tt.want)
			}
		})
	}
}

func TestParseEdits(t *testing.T) {
	in := "Change the greeting.\n\n" + f3 + "python path=app/main.py\n" +
		"<<<<<<< SEARCH\ndef greet():\n    return \"hi\"\n=======\ndef greet(name):\n    return f\"hi {name}\"\n>>>>>>> REPLACE\n" +
		"and drop the debug line:\n" +
		"<<<<<<< SEARCH\nprint('debug')\n=======\n>>>>>>> REPLACE\n" + f3 + "\n" +
		"DELETE app/old.py\n"
	out, err := Parse(in)
	if err != nil {
		t.Fatal(err)
	}
	want := Output{
		Edits: []Edit{
			{"app/main.py", "def greet():\n    return \"hi\"\n", "def greet(name):\n    return f\"hi {name}\"\n"},
			{"app/main.py", "print('debug')\n", ""},
		},
		Deletes: []string{"app/old.py"},
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("got %#v\nwant %#v", out, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want error
		msg  string
	}{
		{"no code", "Sure, I can help with that.", ErrNoCode, "no code blocks"},
		{"no paths", f3 + "python\nprint(1)\n" + f3, ErrNoPath, "1 untagged"},
		{"dotdot", f3 + "python path=../evil.py\nx\n" + f3, workspace.ErrUnsafePath, "leaves the workspace"},
		{"absolute", "File: /etc/passwd\n" + f3 + "\nroot\n" + f3, workspace.ErrUnsafePath, "is absolute"},
		{"heuristic dotdot", f3 + "../x.py\nx\n" + f3, workspace.ErrUnsafePath, "../x.py"},
		{"backslash", f3 + `python path=a\b.py` + "\nx\n" + f3, workspace.ErrUnsafePath, "backslash"},
		{"delete unsafe", "DELETE ../a", workspace.ErrUnsafePath, "DELETE"},
		{"git config", f3 + "ini path=.git/config\n[core]\n\tfsmonitor = \"touch x\"\n" + f3, workspace.ErrVCSMetadata, ".git/config"},
		{"nested git hook", f3 + "sh path=lib/.GIT/hooks/pre-commit\ntouch x\n" + f3, workspace.ErrVCSMetadata, "pre-commit"},
		{"delete git", "DELETE .git/index", workspace.ErrVCSMetadata, ".git/index"},
		{"unclosed", f3 + "python path=app/main.py\nprint(1)\n", ErrUnclosed, "app/main.py"},
		{"missing divider", f3 + "go path=a.go\n<<<<<<< SEARCH\nx\n>>>>>>> REPLACE\n" + f3, ErrMalformedEdit, "missing ======="},
		{"missing replace", f3 + "go path=a.go\n<<<<<<< SEARCH\nx\n=======\ny\n" + f3, ErrMalformedEdit, "missing >>>>>>> REPLACE"},
		{"empty search", f3 + "go path=a.go\n<<<<<<< SEARCH\n=======\ny\n>>>>>>> REPLACE\n" + f3, ErrMalformedEdit, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.in)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error = %v, want %v mentioning %q", err, tt.want, tt.msg)
			}
		})
	}
}

func TestApply(t *testing.T) {
	base := []workspace.File{
		{Path: "app/main.py", Mode: 0o755, Data: []byte("import os\n\ndef greet():\n    return \"hi\"\n\nprint(greet())\n")},
		{Path: "app/old.py", Data: []byte("x = 1\n")},
		{Path: "win.txt", Data: []byte("one\r\ntwo\r\nthree\r\n")},
		{Path: "tail.txt", Data: []byte("a\nb")},
	}
	tests := []struct {
		name    string
		out     Output
		changed []string
		check   map[string]string // path -> content; "" with ok=false in result means deleted
		gone    []string
	}{
		{
			name:    "new file and rewrite",
			out:     Output{Blocks: []Block{{"app/new.py", "y = 2\n"}, {"app/old.py", "x = 2\n"}}},
			changed: []string{"app/new.py", "app/old.py"},
			check:   map[string]string{"app/new.py": "y = 2\n", "app/old.py": "x = 2\n"},
		},
		{
			name:    "identical rewrite is no change",
			out:     Output{Blocks: []Block{{"app/old.py", "x = 1\n"}}},
			changed: []string{},
			check:   map[string]string{"app/old.py": "x = 1\n"},
		},
		{
			name: "edit keeps mode and surroundings",
			out: Output{Edits: []Edit{{"app/main.py", "def greet():\n    return \"hi\"\n",
				"def greet(name=\"you\"):\n    return f\"hi {name}\"\n"}}},
			changed: []string{"app/main.py"},
			check:   map[string]string{"app/main.py": "import os\n\ndef greet(name=\"you\"):\n    return f\"hi {name}\"\n\nprint(greet())\n"},
		},
		{
			name:    "edit deleting lines",
			out:     Output{Edits: []Edit{{"app/main.py", "import os\n\n", ""}}},
			changed: []string{"app/main.py"},
			check:   map[string]string{"app/main.py": "def greet():\n    return \"hi\"\n\nprint(greet())\n"},
		},
		{
			name:    "edit of crlf file keeps crlf",
			out:     Output{Edits: []Edit{{"win.txt", "two\n", "2\nzwei\n"}}},
			changed: []string{"win.txt"},
			check:   map[string]string{"win.txt": "one\r\n2\r\nzwei\r\nthree\r\n"},
		},
		{
			name:    "edit of last line without newline",
			out:     Output{Edits: []Edit{{"tail.txt", "b\n", "B\nC\n"}}},
			changed: []string{"tail.txt"},
			check:   map[string]string{"tail.txt": "a\nB\nC"},
		},
		{
			name:    "edit after block on same file",
			out:     Output{Blocks: []Block{{"n.py", "a\nb\n"}}, Edits: []Edit{{"n.py", "b\n", "c\n"}}},
			changed: []string{"n.py"},
			check:   map[string]string{"n.py": "a\nc\n"},
		},
		{
			name:    "delete",
			out:     Output{Deletes: []string{"app/old.py"}},
			changed: []string{"app/old.py"},
			gone:    []string{"app/old.py"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cloneFiles(base)
			files, changed, err := Apply(base, tt.out)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if !reflect.DeepEqual(base, before) {
				t.Error("Apply modified its input")
			}
			if !reflect.DeepEqual(changed, tt.changed) {
				t.Errorf("changed = %q, want %q", changed, tt.changed)
			}
			got := map[string]workspace.File{}
			for i, f := range files {
				if i > 0 && files[i-1].Path >= f.Path {
					t.Errorf("files not sorted at %q", f.Path)
				}
				got[f.Path] = f
			}
			for p, want := range tt.check {
				if string(got[p].Data) != want {
					t.Errorf("%s = %q, want %q", p, got[p].Data, want)
				}
			}
			for _, p := range tt.gone {
				if _, ok := got[p]; ok {
					t.Errorf("%s still present", p)
				}
			}
			if got["app/main.py"].Mode != 0o755 && tt.gone == nil {
				t.Errorf("app/main.py lost its mode: %o", got["app/main.py"].Mode)
			}
		})
	}
}

func TestApplyErrors(t *testing.T) {
	base := []workspace.File{
		{Path: "a.py", Data: []byte("x = 1\ny = 2\nx = 1\n  z = 3\n")},
	}
	tests := []struct {
		name string
		out  Output
		want error
		msg  string
	}{
		{"not found", Output{Edits: []Edit{{"a.py", "w = 0\n", "w = 1\n"}}}, ErrSearchNotFound, `edit a.py: SEARCH lines not found (first SEARCH line "w = 0")`},
		{"whitespace hint", Output{Edits: []Edit{{"a.py", "z = 3\n", "z = 4\n"}}}, ErrSearchNotFound, "whitespace"},
		{"ambiguous", Output{Edits: []Edit{{"a.py", "x = 1\n", "x = 2\n"}}}, ErrSearchAmbiguous, "2 places"},
		{"partial line is no match", Output{Edits: []Edit{{"a.py", "x = \n", ""}}}, ErrSearchNotFound, "a.py"},
		{"missing file", Output{Edits: []Edit{{"b.py", "x\n", "y\n"}}}, ErrMissingFile, "edit b.py"},
		{"delete missing", Output{Deletes: []string{"b.py"}}, ErrMissingFile, "delete b.py"},
		{"edit after delete", Output{Deletes: []string{"a.py"}, Edits: []Edit{{"a.py", "x = 1\n", ""}}}, ErrMissingFile, "a.py"},
		{"unsafe block", Output{Blocks: []Block{{"../a.py", "x"}}}, workspace.ErrUnsafePath, "../a.py"},
		{"unsafe edit", Output{Edits: []Edit{{"/a.py", "x", ""}}}, workspace.ErrUnsafePath, "absolute"},
		{"nul", Output{Blocks: []Block{{"a\x00.py", "x"}}}, workspace.ErrUnsafePath, "NUL"},
		{"too large", Output{Blocks: []Block{{"big.bin", strings.Repeat("x", int(workspace.DefaultLimits.MaxFileBytes)+1)}}}, ErrFileTooLarge, "big.bin"},
		{"edit grows too large", Output{Edits: []Edit{{"a.py", "y = 2\n", strings.Repeat("y", int(workspace.DefaultLimits.MaxFileBytes)) + "\n"}}}, ErrFileTooLarge, "a.py"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, changed, err := Apply(base, tt.out)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error = %v, want %v mentioning %q", err, tt.want, tt.msg)
			}
			if files != nil || changed != nil {
				t.Errorf("failed Apply returned files %d / changed %q", len(files), changed)
			}
		})
	}
}

// The full round trip: a model answer parsed and applied.
func TestParseThenApply(t *testing.T) {
	answer := "I'll add a test and fix the bug.\n\nFile: calc.py\n" + f3 + "python\n" +
		"<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n" + f3 + "\n\n" +
		f3 + "python path=test_calc.py\nfrom calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n" + f3 + "\n"
	out, err := Parse(answer)
	if err != nil {
		t.Fatal(err)
	}
	files, changed, err := Apply([]workspace.File{{Path: "calc.py", Data: []byte("def add(a, b):\n    return a - b\n")}}, out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(changed, []string{"calc.py", "test_calc.py"}) || len(files) != 2 ||
		string(files[0].Data) != "def add(a, b):\n    return a + b\n" {
		t.Errorf("changed %q, files %+v", changed, files)
	}
}

func cloneFiles(in []workspace.File) []workspace.File {
	out := make([]workspace.File, len(in))
	for i, f := range in {
		f.Data = append([]byte(nil), f.Data...)
		out[i] = f
	}
	return out
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		f3 + "python path=app/main.py\nprint(1)\n" + f3,
		"File: a.go\n" + f3 + "go\npackage a\n" + f3,
		"### ../x\n" + f3 + "\nx\n" + f3,
		f3 + "a.py\n<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n" + f3,
		"````md path=r.md\n" + f3 + "sh\nls\n" + f3 + "\n````",
		"DELETE a.py\n", "**./a/../b.py**\n" + f3 + "\n" + f3, f3 + "python path=\"\"\n" + f3,
		"~~~ title=x/y.txt\n~~~", f3 + "x:./\n" + f3,
	} {
		f.Add(s)
	}
	base := []workspace.File{{Path: "a.py", Data: []byte("x\ny\n")}, {Path: "app/main.py", Data: []byte("print(0)\n")}}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := Parse(in)
		if err != nil {
			return
		}
		var paths []string
		for _, b := range out.Blocks {
			paths = append(paths, b.Path)
		}
		for _, e := range out.Edits {
			paths = append(paths, e.Path)
			if e.Search == "" {
				t.Fatalf("edit with empty search: %+v", e)
			}
		}
		paths = append(paths, out.Deletes...)
		if len(paths) == 0 {
			t.Fatal("nil error with nothing parsed")
		}
		for _, p := range paths {
			if c, err := workspace.CleanPath(p); err != nil || c != p {
				t.Fatalf("unsafe or unclean path %q: %v", p, err)
			}
		}
		files, _, err := Apply(base, out)
		if err == nil {
			if err := workspace.DefaultLimits.Check(files); err != nil {
				t.Fatalf("Apply produced an invalid workspace: %v", err)
			}
		}
	})
}
