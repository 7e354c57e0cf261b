package languages

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/testenv"
)

// readmeTable is the README's table of languages, as the registry makes
// it.
func readmeTable() string {
	var b strings.Builder
	b.WriteString("| Language (`--lang`) | Detected from | Tests run by default | Sandbox image | Example |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, l := range All() {
		names := "`" + strings.Join(append([]string{l.Name}, l.Aliases...), "`, `") + "`"
		b.WriteString("| " + l.Title + " (" + names + ") | " + code(l.Detect.Markers) + " | " + testsRun(l) +
			" | `" + l.Sandbox.Image + "` | [examples/" + l.Name + "](examples/" + l.Name + ") |\n")
	}
	return b.String()
}

func code(words []string) string { return "`" + strings.Join(words, "`, `") + "`" }

func testsRun(l lang.Language) string {
	if l.Tests.Describe != "" {
		return l.Tests.Describe
	}
	return "`" + l.Tests.CommandLine() + "`"
}

// TestREADMELanguagesMatchTheRegistry: the README's table of languages is
// the registry's, and every language has its example project. Run with
// AUTOCODER_UPDATE_README=1 to rewrite the table.
func TestREADMELanguagesMatchTheRegistry(t *testing.T) {
	root := testenv.RepoRoot(t)
	path := filepath.Join(root, "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	const head = "| Language (`--lang`) |"
	start := strings.Index(readme, head)
	if start < 0 {
		t.Fatalf("README.md has no table of languages (a line starting %q)", head)
	}
	end := start
	for end < len(readme) && strings.HasPrefix(readme[end:], "|") {
		nl := strings.IndexByte(readme[end:], '\n')
		if nl < 0 {
			end = len(readme)
			break
		}
		end += nl + 1
	}
	want := readmeTable()
	if got := readme[start:end]; got != want {
		if os.Getenv("AUTOCODER_UPDATE_README") != "" {
			if err := os.WriteFile(path, []byte(readme[:start]+want+readme[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README's table of languages is not the registry's; rewrite it with AUTOCODER_UPDATE_README=1 go test ./internal/lang/languages -run README\ngot:\n%s\nwant:\n%s", got, want)
	}
	for _, l := range All() {
		if _, err := os.Stat(filepath.Join(root, "examples", l.Name, "README.md")); err != nil {
			t.Errorf("%s has no example project: %v", l.Name, err)
		}
	}
}
