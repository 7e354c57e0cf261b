package instructions

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

func files(pairs ...string) []workspace.File {
	var fs []workspace.File
	for i := 0; i < len(pairs); i += 2 {
		fs = append(fs, workspace.File{Path: pairs[i], Data: []byte(pairs[i+1])})
	}
	workspace.Sort(fs)
	return fs
}

func TestFind(t *testing.T) {
	tree := files(
		"AGENTS.md", "root rules\n",
		"CLAUDE.md", "claude root: not read, AGENTS.md is there\n",
		"app/AGENTS.md", "app rules\n",
		"app/api/CLAUDE.md", "api rules from CLAUDE.md\n",
		"app/api/handlers.py", "",
		"lib/AGENTS.md", "lib rules\n",
		"lib/util/AGENTS.md", "   \n",
		"docs/AGENTS.md", "docs rules: not on the path\n",
	)
	tests := []struct {
		name  string
		files []workspace.File
		dirs  []string
		want  []string
	}{
		{"root only", tree, nil, []string{"AGENTS.md"}},
		{"nested, nearest last", tree, []string{"app/api"}, []string{"AGENTS.md", "app/AGENTS.md", "app/api/CLAUDE.md"}},
		{"a file's directory", tree, []string{"app/api/handlers.py"}, []string{"AGENTS.md", "app/AGENTS.md", "app/api/CLAUDE.md"}},
		{"several directories, shallow first", tree, []string{"lib/util", "./app/api/", "app"},
			[]string{"AGENTS.md", "app/AGENTS.md", "lib/AGENTS.md", "app/api/CLAUDE.md"}},
		{"a directory that does not exist yet", tree, []string{"app/new/pkg"}, []string{"AGENTS.md", "app/AGENTS.md"}},
		{"paths outside the workspace are ignored", tree, []string{"../x", "/etc", "."}, []string{"AGENTS.md"}},
		{"CLAUDE.md where AGENTS.md is absent", files("CLAUDE.md", "c", ".github/copilot-instructions.md", "g"), nil, []string{"CLAUDE.md"}},
		{"copilot instructions last", files(".github/copilot-instructions.md", "g", "src/AGENTS.md", "s"), []string{"src"},
			[]string{".github/copilot-instructions.md", "src/AGENTS.md"}},
		{"binary files are not instructions", files("AGENTS.md", "a\x00b", "CLAUDE.md", "c"), nil, []string{"CLAUDE.md"}},
		{"none", files("main.go", "package main"), []string{"."}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := Find(tt.files, tt.dirs, 0)
			if got := set.Paths(); !slices.Equal(got, tt.want) {
				t.Fatalf("read %q, want %q", got, tt.want)
			}
			last := -1
			for _, p := range tt.want {
				i := strings.Index(set.Text, "### "+p+"\n")
				if i <= last {
					t.Errorf("heading of %s missing or out of order in:\n%s", p, set.Text)
				}
				last = i
			}
			if len(tt.want) == 0 && set.Text != "" {
				t.Errorf("text without sources: %q", set.Text)
			}
		})
	}
}

func TestFindText(t *testing.T) {
	set := Find(files("AGENTS.md", "Use tabs.\n", "app/AGENTS.md", "Never edit generated.py.\n"), []string{"app"}, 0)
	want := "### AGENTS.md\nUse tabs.\n\n### app/AGENTS.md\nNever edit generated.py.\n"
	if set.Text != want {
		t.Errorf("text:\n%q\nwant\n%q", set.Text, want)
	}
}

func TestFindBudget(t *testing.T) {
	long := strings.Repeat("a rule of the project, stated at length\n", 100) // 4000 bytes
	tests := []struct {
		name   string
		files  []workspace.File
		budget int
		shown  map[string]int // bytes shown per file; absent means whole
	}{
		{"fits", files("AGENTS.md", "short\n", "x/AGENTS.md", "also short\n"), 100, nil},
		{"one long file cut at a line", files("AGENTS.md", long), 1010, map[string]int{"AGENTS.md": 1000}},
		{"a small file keeps all, the long one takes the rest", files("AGENTS.md", long, "x/AGENTS.md", "small\n"), 1016,
			map[string]int{"AGENTS.md": 1000}},
		{"two long files share equally", files("AGENTS.md", long, "x/AGENTS.md", long), 1000,
			map[string]int{"AGENTS.md": 480, "x/AGENTS.md": 480}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := Find(tt.files, []string{"x"}, tt.budget)
			total := 0
			for _, s := range set.Sources {
				want, cut := tt.shown[s.Path]
				if !cut {
					want = s.Bytes
				}
				if s.Shown != want || s.Truncated() != cut {
					t.Errorf("%s: shown %d of %d, want %d", s.Path, s.Shown, s.Bytes, want)
				}
				marker := "more bytes of " + s.Path + " not shown; read the file"
				if strings.Contains(set.Text, marker) != cut {
					t.Errorf("%s: truncation marker present = %v, want %v", s.Path, !cut, cut)
				}
				total += s.Shown
			}
			if total > tt.budget {
				t.Errorf("showed %d bytes, budget %d", total, tt.budget)
			}
		})
	}
}

func TestCutAtLine(t *testing.T) {
	tests := []struct {
		text string
		n    int
		want int
	}{
		{"aaaa\nbbbb\ncccc", 12, 10},
		{"aaaaaaaaaaaa\nb", 12, 12}, // no line break in the second half: cut in the line
		{"ééé", 3, 2},               // not inside a UTF-8 sequence
	}
	for _, tt := range tests {
		if got := cutAtLine(tt.text, tt.n); got != tt.want {
			t.Errorf("cutAtLine(%q, %d) = %d, want %d", tt.text, tt.n, got, tt.want)
		}
	}
}
