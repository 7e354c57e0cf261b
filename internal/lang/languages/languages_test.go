package languages

import (
	"strings"
	"testing"
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
	cases := []struct {
		name          string
		root          []string
		testCmd, task string
		want          string
	}{
		{"go.mod", []string{"go.mod", "main.go"}, "", "fix the bug", "go"},
		{"pyproject", []string{"pyproject.toml", "src"}, "", "fix the bug", "python"},
		{"two languages: the test command decides", []string{"go.mod", "requirements.txt"}, "python3 -m pytest -q", "", "python"},
		{"two languages: the test command decides, the other way", []string{"go.mod", "requirements.txt"}, "cd api && go test ./...", "", "go"},
		{"no project: the task names it", nil, "", "Build a REST API in Go", "go"},
		{"no project: golang", nil, "", "a golang CLI", "go"},
		{"no project, no word: the default", nil, "", "Build a CSV to JSON converter", Default},
		{"the project outranks the task's words", []string{"go.mod"}, "", "port this Python script", "go"},
		{"a test command alone", []string{"main.c"}, "pytest -q", "", "python"},
	}
	for _, tc := range cases {
		if got := Detect(tc.root, tc.testCmd, tc.task); got.Language.Name != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got.Language.Name, got.Reason, tc.want)
		}
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
