package repomap

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
)

// texts renders symbols as "Parent.Text@Line" for comparison.
func texts(syms []Symbol) []string {
	var out []string
	for _, s := range syms {
		t := s.Text
		if s.Parent != "" {
			t = s.Parent + "." + t
		}
		out = append(out, t)
	}
	return out
}

func TestGoSymbols(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"funcs and methods", `package p
// Doc comments are left out.
func Add(a, b int) (int, error) { return a + b, nil }
func (s *Store[K]) Put(key K, v []byte) error { return nil }
func (Store[K]) len() int { return 0 }
`, []string{"func Add(a, b int) (int, error)", "Store.func (s *Store[K]) Put(key K, v []byte) error", "Store.func (Store[K]) len() int"}},
		{"types", `package p
type S struct{ A int }
type I interface{ M() }
type Alias = map[string]int
type Fn func(int) bool
type (
	G[T any] struct{}
)
`, []string{"type S struct", "type I interface", "type Alias = map[string]int", "type Fn func(int) bool", "type G struct"}},
		{"consts and vars", `package p
const A, B = 1, 2
const (
	C = iota
	_
	D
)
var x, _ = f()
`, []string{"const A", "const B", "const C", "const D", "var x"}},
		{"a file with errors keeps what parses", "package p\nfunc Good() {}\nfunc Bad( {\n", []string{"func Good()", "func Bad()"}},
		{"not Go at all", "this is not go", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := texts(goSymbols("p.go", []byte(tt.src))); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
	syms := goSymbols("p.go", []byte("package p\n\nfunc (r *T) M() {}\n"))
	if syms[0].Kind != "method" || syms[0].Name != "M" || syms[0].Line != 3 {
		t.Errorf("method symbol %+v", syms[0])
	}
}

func TestPythonSymbols(t *testing.T) {
	src := `"""Module."""
import os

LIMIT = 3

def top(a, b=2):
    def inner():
        pass
    return a

async def fetch(url):
    pass

def long_signature(
    a,
    b,
):
    pass

@decorator
class Shape(Base, metaclass=Meta):
    """Doc."""

    def area(self):
        def helper():
            pass
        return 0

    async def load(self):
        pass

    class Inner:
        def hidden(self):
            pass

if __name__ == "__main__":
    def not_top():
        pass
`
	want := []string{"def top(a, b=2)", "async def fetch(url)", "def long_signature(…)", "class Shape(Base, metaclass=Meta)",
		"Shape.def area(self)", "Shape.async def load(self)"}
	got := texts(pythonSymbols([]byte(src)))
	if !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if syms := pythonSymbols([]byte(src)); syms[0].Line != 6 || syms[0].Kind != "function" || syms[4].Kind != "member" {
		t.Errorf("symbols %+v", syms[:5])
	}
}

func requireCtags(t *testing.T) string {
	t.Helper()
	prog, ok := findCtags("")
	if !ok {
		_, err := exec.LookPath("ctags")
		if err == nil {
			err = exec.ErrNotFound
		}
		testenv.RequireService(t, "Universal Ctags with JSON output", err)
	}
	return prog
}

func TestCtagsSymbols(t *testing.T) {
	prog := requireCtags(t)
	files := []workspace.File{
		{Path: "app/models.py", Data: []byte("import os\nfrom x import y\nX = 1\n\nclass User(Base):\n    def save(self):\n        def inner():\n            pass\n\ndef helper(a):\n    pass\n")},
		{Path: "web/app.js", Data: []byte("export function render(el) {\n  return el;\n}\nclass View {\n  show() {}\n}\nconst MAX = 3;\n")},
	}
	syms, err := ctagsSymbols(context.Background(), prog, files)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"app/models.py": {"class User(Base)", "User.def save(self)", "def helper(a)"},
		"web/app.js":    {"export function render(el)", "class View", "View.show()", "const MAX = 3;"},
	}
	for p, w := range want {
		if got := texts(syms[p]); !slices.Equal(got, w) {
			t.Errorf("%s: got %q\nwant %q", p, got, w)
		}
	}
}

// TestCtagsIgnoresTheWorkspacesOptions: ctags reads option files from
// .ctags.d in its working directory; the workspace's must not steer it.
func TestCtagsIgnoresTheWorkspacesOptions(t *testing.T) {
	prog := requireCtags(t)
	files := []workspace.File{
		{Path: ".ctags.d/evil.ctags", Data: []byte("--exclude=*.py\n")},
		{Path: "app.py", Data: []byte("def helper(a):\n    pass\n")},
	}
	syms, err := ctagsSymbols(context.Background(), prog, files)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(syms["app.py"]); !slices.Equal(got, []string{"def helper(a)"}) {
		t.Errorf("app.py: got %q: the workspace's .ctags.d was obeyed", got)
	}
}

func TestExtractChoosesExtractor(t *testing.T) {
	files := []workspace.File{
		{Path: "a.py", Data: []byte("def f():\n    pass\n")},
		{Path: "b.go", Data: []byte("package b\nfunc G() {}\n")},
		{Path: "notes.md", Data: []byte("# def not_code():\n")},
	}
	tests := []struct {
		name  string
		ctags string
		want  []string
	}{
		{"ctags disabled", "-", []string{"go/ast", "python fallback"}},
		{"a program that is not Universal Ctags", "/bin/echo", []string{"go/ast", "python fallback"}},
		{"a program that does not exist", "/nonexistent/ctags", []string{"go/ast", "python fallback"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			syms, used, err := extract(context.Background(), files, tt.ctags, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(used, tt.want) {
				t.Errorf("extractors %q, want %q", used, tt.want)
			}
			if texts(syms["a.py"])[0] != "def f()" || texts(syms["b.go"])[0] != "func G()" {
				t.Errorf("symbols %v", syms)
			}
			if _, ok := syms["notes.md"]; ok {
				t.Error("markdown got symbols")
			}
		})
	}
	t.Run("ctags", func(t *testing.T) {
		prog := requireCtags(t)
		syms, used, err := extract(context.Background(), files, prog, nil)
		if err != nil || !slices.Equal(used, []string{"go/ast", "ctags"}) || texts(syms["a.py"])[0] != "def f()" {
			t.Errorf("extract with ctags: %v %q %v", err, used, syms)
		}
	})
}

func TestPatternText(t *testing.T) {
	tests := []struct{ pattern, want string }{
		{`/^class Foo(Base):$/`, "class Foo(Base)"},
		{`/^export function f(a) {}$/`, "export function f(a)"},
		{`/^  path = "a\/b" \\ x$/`, `path = "a/b" \ x`},
		{`/^{$/`, "function f"},
		{"/^" + strings.Repeat("x", 300) + "$/", strings.Repeat("x", maxSymbolText) + "…"},
	}
	for _, tt := range tests {
		if got := patternText(tt.pattern, "function", "f"); got != tt.want {
			t.Errorf("patternText(%q) = %q, want %q", tt.pattern, got, tt.want)
		}
	}
}
