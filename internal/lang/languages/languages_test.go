package languages

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/lang/langtest"
)

func TestLookupTakesNamesAndAliasesWithoutCase(t *testing.T) {
	for in, want := range map[string]string{"Python": "python", " GO ": "go", "golang": "go", "py": "python"} {
		l, err := Lookup(in)
		if err != nil || l.Name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", in, l.Name, err, want)
		}
	}
	_, err := Lookup("cobol")
	if err == nil || !strings.Contains(err.Error(), List()) {
		t.Errorf("Lookup(cobol): %v; want the list of languages", err)
	}
}

func TestDetect(t *testing.T) {
	for _, c := range []langtest.DetectCase{
		{Name: "go.mod", Root: []string{"go.mod", "main.go"}, Task: "fix the bug", Want: "go"},
		{Name: "pyproject", Root: []string{"pyproject.toml", "src"}, Task: "fix the bug", Want: "python"},
		{Name: "two languages: the test command decides", Root: []string{"go.mod", "requirements.txt"}, TestCmd: "python3 -m pytest -q", Want: "python"},
		{Name: "two languages: the test command decides, the other way", Root: []string{"go.mod", "requirements.txt"}, TestCmd: "cd api && go test ./...", Want: "go"},
		{Name: "no project: the task names it", Task: "Build a REST API in Go", Want: "go"},
		{Name: "no project: golang", Task: "a golang CLI", Want: "go"},
		{Name: "no project, no word: the default", Task: "Build a CSV to JSON converter", Want: Default},
		{Name: "the project outranks the task's words", Root: []string{"go.mod"}, Task: "port this Python script", Want: "go"},
		{Name: "a test command alone", Root: []string{"main.c"}, TestCmd: "pytest -q", Want: "python"},
	} {
		d := Detect(c.Root, c.TestCmd, c.Task)
		c.Check(t, d.Language.Name, d.Reason)
	}
}

func TestEveryLanguageIsComplete(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range All() {
		for _, n := range append([]string{l.Name}, l.Aliases...) {
			if seen[n] {
				t.Errorf("%s: the name %q is taken", l.Name, n)
			}
			seen[n] = true
			if n != strings.ToLower(n) {
				t.Errorf("%s: %q is not lower case", l.Name, n)
			}
		}
		if l.Title == "" || l.Guide == "" || len(l.Tests.Command) == 0 || l.Tests.IsTestFile == nil ||
			len(l.Extensions) == 0 || len(l.Detect.Markers) == 0 || l.Sandbox.Image == "" || l.Sandbox.Install == "" {
			t.Errorf("%s: incomplete: %+v", l.Name, l)
		}
	}
}

// TestRegistriesAreEgressRules: each language's default registries are
// rules the egress proxy takes, and name hosts, never whole domains.
func TestRegistriesAreEgressRules(t *testing.T) {
	for _, l := range All() {
		for _, r := range l.Deps.Registries {
			if err := egress.ParseRule(r); err != nil || strings.Contains(r, "*") {
				t.Errorf("%s: registry %q: %v", l.Name, r, err)
			}
		}
	}
}
