package repomap

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/repogen"
	"github.com/autocoder/autocoder/internal/workspace"
)

func TestScore(t *testing.T) {
	py := func(defs ...string) []Symbol {
		var out []Symbol
		for _, d := range defs {
			out = append(out, Symbol{Kind: "function", Name: d, Text: "def " + d + "()"})
		}
		return out
	}
	newFiles := func() []*ranked {
		return []*ranked{
			{path: "app/models.py", symbols: py("save_user", "load_user")},
			{path: "app/views.py", symbols: py("render_page")},
			{path: "app/billing/discounts.py", symbols: py("apply_discount")},
			{path: "tests/test_models.py", symbols: py("test_save"), imports: []string{"app/models.py"}},
			{path: "tests/test_checkout.py", symbols: py("test_checkout"), imports: []string{"app/billing/discounts.py"}},
			{path: "pkg/store/store.go", symbols: []Symbol{{Kind: "func", Name: "Put"}}},
			{path: "pkg/store/store_test.go", symbols: []Symbol{{Kind: "func", Name: "TestPut"}}},
			{path: "app/__init__.py"}, {path: "app/billing/__init__.py"}, {path: "pkg/__init__.py"}, {path: "tests/__init__.py"},
		}
	}
	tests := []struct {
		name    string
		q       Query
		top     []string            // the highest ranked files, in order
		reasons map[string][]string // reasons some files must give
		zero    []string            // files that must score nothing
	}{
		{"symbol named in the task, its test follows by import",
			Query{Task: "apply_discount rounds the wrong way"},
			[]string{"app/billing/discounts.py", "tests/test_checkout.py"},
			map[string][]string{"app/billing/discounts.py": {"defines apply_discount"}, "tests/test_checkout.py": {"tests app/billing/discounts.py"}},
			[]string{"app/views.py", "tests/test_models.py"}},
		{"a traceback names the failing file",
			Query{Failure: "Traceback:\n  File \"/work/app/views.py\", line 3, in render_page\nNameError"},
			[]string{"app/views.py"},
			map[string][]string{"app/views.py": {"in the failure", "defines render_page (in the failure)"}},
			[]string{"app/models.py"}},
		{"a dotted module path in the failure",
			Query{Failure: "ImportError: cannot import name 'x' from app.billing.discounts"},
			[]string{"app/billing/discounts.py"},
			map[string][]string{"app/billing/discounts.py": {"in the failure"}}, nil},
		{"failing files given", Query{FailingFiles: []string{"app/models.py"}},
			[]string{"app/models.py", "tests/test_models.py"},
			map[string][]string{"tests/test_models.py": {"tests app/models.py"}}, []string{"app/views.py"}},
		{"a path in the task", Query{Task: "Refactor pkg/store/store.go to use a map"},
			[]string{"pkg/store/store.go", "pkg/store/store_test.go"},
			map[string][]string{"pkg/store/store.go": {"named in the task"}, "pkg/store/store_test.go": {"tests pkg/store/store.go"}}, []string{"app/models.py"}},
		{"words of the task in paths", Query{Task: "the billing totals are off"},
			[]string{"app/billing/discounts.py"},
			map[string][]string{"app/billing/discounts.py": {`path matches "billing"`}}, []string{"app/models.py"}},
		{"a bare file name, as go test prints it", Query{Failure: "--- FAIL: TestPut (0.00s)\n    store_test.go:12: got 1, want 2"},
			[]string{"pkg/store/store_test.go", "pkg/store/store.go"},
			map[string][]string{"pkg/store/store_test.go": {"in the failure"}, "pkg/store/store.go": {"tested by pkg/store/store_test.go"}}, nil},
		{"a bare name many files share points at none", Query{Failure: "__init__.py:1: SyntaxError"},
			nil, nil, []string{"app/__init__.py"}},
		{"common words match nothing", Query{Task: "fix the test and make all tests pass with no error"},
			nil, nil, []string{"app/models.py", "tests/test_models.py", "pkg/store/store_test.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := newFiles()
			score(files, tt.q)
			byPath := map[string]*ranked{}
			for _, f := range files {
				byPath[f.path] = f
			}
			slices.SortStableFunc(files, func(a, b *ranked) int { return b.score - a.score })
			for i, p := range tt.top {
				if files[i].path != p {
					t.Errorf("rank %d is %s (%d: %q), want %s", i, files[i].path, files[i].score, files[i].reasons, p)
				}
			}
			for p, want := range tt.reasons {
				for _, r := range want {
					if !slices.Contains(byPath[p].reasons, r) {
						t.Errorf("%s reasons %q lack %q", p, byPath[p].reasons, r)
					}
				}
			}
			for _, p := range tt.zero {
				if byPath[p].score != 0 {
					t.Errorf("%s scored %d: %q", p, byPath[p].score, byPath[p].reasons)
				}
			}
		})
	}
}

func TestBuildWhole(t *testing.T) {
	files := []workspace.File{
		{Path: "app.py", Data: []byte("def f():\n    return 1\n")},
		{Path: "logo.png", Data: []byte("\x89PNG\x00\x00")},
		{Path: "test_app.py", Data: []byte("from app import f")},
	}
	m, err := Build(context.Background(), files, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "```path=app.py\ndef f():\n    return 1\n```\n```path=test_app.py\nfrom app import f\n```\n"
	if !m.Whole || m.Text != want {
		t.Errorf("whole = %v, text:\n%s", m.Whole, m.Text)
	}
	m, err = Build(context.Background(), files, Options{WholeBelow: -1, Ctags: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Whole || !strings.Contains(m.Text, "app.py\n  def f() [1]\n") || strings.Contains(m.Text, "logo.png") {
		t.Errorf("map of a small project when asked for one:\n%s", m.Text)
	}
}

// TestBuildLarge maps the generated repository: within every budget the
// map holds, the planted bug's file comes first among the code with the
// function the task names, and every file is accounted for.
func TestBuildLarge(t *testing.T) {
	r := repogen.Generate(repogen.Options{Seed: 1})
	q := Query{Task: r.Bug.Symptom + " Look at apply_discount."}
	for _, ctags := range []string{"", "-"} {
		for _, budget := range []int{300, 1000, 4096} {
			t.Run(fmt.Sprintf("ctags=%q/budget=%d", ctags, budget), func(t *testing.T) {
				if ctags == "" {
					requireCtags(t)
				}
				m, err := Build(context.Background(), r.Files, Options{Query: q, TokenBudget: budget, Ctags: ctags})
				if err != nil {
					t.Fatal(err)
				}
				if Tokens(m.Text) > budget {
					t.Errorf("map of %d tokens over the budget of %d", Tokens(m.Text), budget)
				}
				if m.Whole || m.Detailed+m.Listed+m.Omitted != len(r.Files) || len(m.Entries) != len(r.Files) {
					t.Errorf("detailed %d + listed %d + omitted %d != %d files", m.Detailed, m.Listed, m.Omitted, len(r.Files))
				}
				if m.Entries[0].Path != r.Bug.Path {
					t.Errorf("first entry %s (%q), want %s", m.Entries[0].Path, m.Entries[0].Reasons, r.Bug.Path)
				}
				if !strings.Contains(m.Text, r.Bug.Path+"  (defines apply_discount") || !strings.Contains(m.Text, "def apply_discount(price_cents, percent) [") {
					t.Errorf("the bug's file or function is missing:\n%s", m.Text)
				}
				if budget >= 1000 && m.Listed == 0 {
					t.Error("no files listed by name: the map does not show the shape of the tree")
				}
				if m.Omitted > 0 && !strings.Contains(m.Text, fmt.Sprintf("[… %d more files not shown", m.Omitted)) {
					t.Error("no note of the files left out")
				}
			})
		}
	}
}

// When many files rank, part of the budget is still kept for the names of
// the others, so the model sees the shape of the whole tree.
func TestBuildKeepsRoomForTheTree(t *testing.T) {
	r := repogen.Generate(repogen.Options{Seed: 1})
	m, err := Build(context.Background(), r.Files, Options{Query: Query{Task: "billing catalog inventory shipping"}, TokenBudget: 2000, Ctags: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Listed < 50 || !strings.Contains(m.Text, "\nOther files:\n") {
		t.Errorf("%d files listed by name:\n%s", m.Listed, m.Text)
	}
}

// BenchmarkBuild maps the generated repository (Seed 1: over 300 files and
// 2 MiB) and reports the map's size next to the time to build it:
//
//	go test -run '^$' -bench BuildMap -benchtime 10x ./internal/repomap/
func BenchmarkBuildMap(b *testing.B) {
	r := repogen.Generate(repogen.Options{Seed: 1})
	q := Query{Task: r.Bug.Symptom, Failure: "FAILED " + r.Bug.Test + "::test_apply_discount - assert 985 == 850"}
	b.Logf("repository: %d files, %d bytes", len(r.Files), r.Size())
	for _, ctags := range []string{"", "-"} {
		name := map[string]string{"": "ctags", "-": "fallback"}[ctags]
		b.Run(name, func(b *testing.B) {
			if _, ok := findCtags(ctags); ctags == "" && !ok {
				b.Skip("Universal Ctags is not installed")
			}
			var m Map
			for b.Loop() {
				var err error
				if m, err = Build(context.Background(), r.Files, Options{Query: q, Ctags: ctags}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(m.Text)), "map-bytes")
			b.ReportMetric(float64(Tokens(m.Text)), "map-tokens")
			b.ReportMetric(float64(r.Size())/float64(len(m.Text)), "repo/map")
		})
	}
}

func TestMentioned(t *testing.T) {
	paths := []string{"README.md", "app/api/handlers.py", "app/models.py", "lib/util/strings.go", "lib/util/strings_test.go"}
	for _, c := range []struct{ text, want string }{
		{"The handler in app/api/handlers.py returns 500.", "app/api/handlers.py"},
		{"Move the helpers of lib/util into app/api.", "app/api lib/util"},
		{`File "/tmp/ws/app/models.py", line 3, in total`, "app/models.py"},
		{"strings_test.go:12: got 1", "lib/util/strings_test.go"},
		{"import app.models fails", "app/models.py"},
		{"Nothing here names a file of the project.", ""},
	} {
		if got := strings.Join(Mentioned(paths, c.text), " "); got != c.want {
			t.Errorf("Mentioned(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}
