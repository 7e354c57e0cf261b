package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// TestProjectTestsJudgeWithoutTestCmd: a python project with tests in
// tests/, a .gitignore, a .pytest_cache/ and a __pycache__/, run without
// --test-cmd. Its tests judge, and run's announcement, the model's prompt,
// status, status --json and the final line all say so; what the
// .gitignore ignores and the caches never reach the model; and of the
// project's files only the one the task changed is written.
func TestProjectTestsJudgeWithoutTestCmd(t *testing.T) {
	t.Parallel()
	const (
		cacheMarker   = "PYTEST-CACHE-CONTENT"
		pycMarker     = "PYCACHE-CONTENT"
		ignoredMarker = "GITIGNORED-CONTENT"
		defaultCmd    = "python3 -m pytest -q"
	)
	c := newCluster(t, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: "1. Fix add in calc.py."}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: edit("calc.py", "    return a - b", "    return a + b")}},
	))
	proj := t.TempDir()
	project := map[string]string{
		"calc.py":                       buggyCalc,
		"tests/test_calc.py":            calcTest,
		"README.md":                     "# calc\n",
		".gitignore":                    "*.local\n",
		"notes.local":                   ignoredMarker + "\n",
		".pytest_cache/v/cache/nodeids": `["tests/test_calc.py::test_add"] ` + cacheMarker + "\n",
		".pytest_cache/README.md":       "# pytest cache directory " + cacheMarker + "\n",
		"__pycache__/calc.txt":          pycMarker + "\n",
		"tests/__pycache__/t.txt":       pycMarker + "\n",
	}
	for p, body := range project {
		name := filepath.Join(proj, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for p := range project {
		if err := os.Chtimes(filepath.Join(proj, filepath.FromSlash(p)), old, old); err != nil {
			t.Fatal(err)
		}
	}

	stdout, stderr, code := c.cli("run", "--dir", proj, "Fix the failing test in calc.py")
	if code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	m := startedID.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("run printed no task id:\n%s", stderr)
	}
	id := m[1]
	if want := "4 files, 112 bytes; 4 skipped (3 cache or build output, 1 matched .gitignore)"; !strings.Contains(stderr, want) {
		t.Errorf("run does not say what it uploaded and left out (%q):\n%s", want, stderr)
	}
	if want := "are the judge, run by `" + defaultCmd + "`: tests/test_calc.py"; !strings.Contains(stderr, want) {
		t.Errorf("run does not announce the user's tests as the judge (%q):\n%s", want, stderr)
	}
	if want := "succeeded in 1 iteration(s) (your tests passed: " + defaultCmd + ")"; !strings.Contains(stdout, want) {
		t.Errorf("the final line lacks %q:\n%s", want, stdout)
	}
	if want := "  1 file(s) written to " + proj; !strings.Contains(stdout, want) {
		t.Errorf("run does not say it wrote the one changed file (%q):\n%s", want, stdout)
	}
	if strings.Contains(stdout, "written by the model") {
		t.Errorf("the final line says the model wrote the tests:\n%s", stdout)
	}
	st := c.status(id)
	if st.Phase != workflows.PhaseSucceeded || st.TestsByModel || st.TestCmd != defaultCmd {
		t.Errorf("status --json: phase %s, testsByModel %v, testCmd %q; want succeeded, false, %q", st.Phase, st.TestsByModel, st.TestCmd, defaultCmd)
	}
	if text := c.mustCLI("status", id); !strings.Contains(text, "the user's tests are the judge") || strings.Contains(text, "written by the model") {
		t.Errorf("status does not say the user's tests judged:\n%s", text)
	}

	reqs := c.model.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model was asked %d times", len(reqs))
	}
	toldCmd := false
	for _, r := range reqs {
		for _, msg := range r.Messages {
			for _, bad := range []string{cacheMarker, ".pytest_cache", pycMarker, "__pycache__", ignoredMarker, "notes.local", "There are no tests yet"} {
				if strings.Contains(msg.Content, bad) {
					t.Errorf("a %s message to the model holds %q:\n%s", msg.Role, bad, msg.Content)
				}
			}
			toldCmd = toldCmd || strings.Contains(msg.Content, defaultCmd)
		}
	}
	if !toldCmd {
		t.Errorf("the model is never told the command that runs the user's tests")
	}

	if b, _ := os.ReadFile(filepath.Join(proj, "calc.py")); !strings.Contains(string(b), "return a + b") {
		t.Errorf("calc.py after run: %q", b)
	}
	err := filepath.WalkDir(proj, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(proj, p)
		if moved := !info.ModTime().Equal(old); moved != (rel == "calc.py") {
			t.Errorf("%s: modification time moved %v, want %v", rel, moved, rel == "calc.py")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
