package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// exampleFix is the change that makes an example's tests pass: one edit
// of one file, as the model sends it.
type exampleFix struct {
	file, search, replace string
}

// exampleFixes are the examples/<language> projects' fixes.
var exampleFixes = map[string]exampleFix{
	"python":     {"slug.py", `    words = re.findall(r"[a-z0-9]+", ascii_title)`, `    words = re.findall(r"[a-z0-9]+", ascii_title.lower())`},
	"go":         {"wordfreq.go", "\t\tcounts[w]++", "\t\tcounts[strings.ToLower(w)]++"},
	"javascript": {"src/invoice.js", "  return Math.round(cents - cents * percent);", "  return Math.round(cents * (1 - percent / 100));"},
	"typescript": {"src/inventory.ts", "    if (have < 0) {", "    if (have < qty) {"},
	"rust":       {"src/parse.rs", "        'h' => Ok(60),", "        'h' => Ok(3600),"},
	"cpp": {"src/stats.cpp", "    return values[values.size() / 2];",
		"    std::size_t mid = values.size() / 2;\n    if (values.size() % 2 == 0) {\n        return (values[mid - 1] + values[mid]) / 2;\n    }\n    return values[mid];"},
	"java": {"src/main/java/com/example/invoice/Invoice.java", "        if (subtotal > DISCOUNT_THRESHOLD_CENTS) {", "        if (subtotal >= DISCOUNT_THRESHOLD_CENTS) {"},
}

// exampleTask is the task of the example in language name: its name in
// the text lets the scripted model tell the tasks apart, never the
// language (which the product must find in the project's files).
func exampleTask(name string) string { return "Fix the failing tests of example " + name }

// exampleScript plays a model that first changes only the notes, so the
// first attempt fails, and fixes the bug when told the tests still fail.
func exampleScript() llmtest.Script {
	return func(req llmtest.ChatRequest) llmtest.Reply {
		last := req.LastUser()
		if strings.Contains(last, planMarker) {
			return llmtest.Reply{Content: "1. Find the bug and fix it."}
		}
		var all strings.Builder
		for _, m := range req.Messages {
			all.WriteString(m.Content)
		}
		for name, fix := range exampleFixes {
			if !strings.Contains(all.String(), exampleTask(name)+"\n") {
				continue
			}
			if strings.Contains(last, retryMarker) {
				return llmtest.Reply{Content: edit(fix.file, fix.search, fix.replace)}
			}
			return llmtest.Reply{Content: "```path=NOTES.md\nLooked at the failing tests.\n```\n"}
		}
		return llmtest.Reply{Status: 400, Content: "no example task in: " + clipText(last, 200)}
	}
}

// TestEveryLanguageFromItsExample: for each language's example project,
// `run --dir` without --lang detects the language from the project's
// files, the project's own tests judge, the first attempt fails and the
// second, which fixes the bug, passes. They run on the docker backend,
// each language in its own image, one after another (at once, the
// compilers of four languages share two cores past the CLI's deadline);
// the languages' own tests run each example on both backends.
func TestEveryLanguageFromItsExample(t *testing.T) {
	t.Parallel()
	root := filepath.Join(testenv.RepoRoot(t), "examples")
	c := newCluster(t, exampleScript(), "AUTOCODER_SANDBOX=docker")
	for _, l := range languages.All() {
		fix, ok := exampleFixes[l.Name]
		if !ok {
			continue
		}
		t.Run(l.Name, func(t *testing.T) {
			proj := t.TempDir()
			copyTree(t, filepath.Join(root, l.Name), proj)
			out, errOut, code := c.cli("run", "--dir", proj, "--max-iterations", "3", exampleTask(l.Name))
			id := taskID(t, errOut)
			st := c.status(id)
			if code != 0 || st.Phase != workflows.PhaseSucceeded {
				t.Fatalf("exit %d, phase %s\n%s\n%s\n%s", code, st.Phase, out, errOut, c.mustCLI("status", id))
			}
			if st.Language != l.Name {
				t.Errorf("language %q, want %q detected from the project", st.Language, l.Name)
			}
			if st.TestsByModel {
				t.Errorf("the model's tests judged; want the project's own")
			}
			if len(st.Checkpoints) != 2 || st.Checkpoints[0].Passed || !st.Checkpoints[1].Passed {
				t.Errorf("checkpoints %+v; want a failed attempt, then a passing one", st.Checkpoints)
			}
			fixed, err := os.ReadFile(filepath.Join(proj, fix.file))
			if err != nil || !strings.Contains(string(fixed), fix.replace) {
				t.Errorf("the fix was not written to %s: %v\n%s", fix.file, err, fixed)
			}
		})
	}
}

// copyTree copies the regular files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFirstRunBuildsTheImage: on a docker host without the language's
// sandbox image, the first `run` builds it (from its recipe, offline here)
// and the task succeeds; nothing else was done beforehand.
func TestFirstRunBuildsTheImage(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds an image")
	}
	image := "autocoder/tmp-first-run:" + strconv.Itoa(os.Getpid())
	if out, err := exec.Command("docker", "image", "inspect", image).CombinedOutput(); err == nil {
		t.Fatalf("%s exists before the test: %s", image, out)
	}
	t.Cleanup(func() { exec.Command("docker", "image", "rm", "-f", image).Run() })
	c := newCluster(t, exampleScript(), "AUTOCODER_SANDBOX=docker", "AUTOCODER_IMAGE_PYTHON="+image)
	proj := t.TempDir()
	copyTree(t, filepath.Join(testenv.RepoRoot(t), "examples", "python"), proj)
	out, errOut, code := c.cli("run", "--dir", proj, "--max-iterations", "3", exampleTask("python"))
	id := taskID(t, errOut)
	if st := c.status(id); code != 0 || st.Phase != workflows.PhaseSucceeded {
		t.Fatalf("exit %d, phase %s\n%s\n%s", code, st.Phase, out, errOut)
	}
	if out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Config.User}}", image).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "65534:65534" {
		t.Errorf("the image was not built as a sandbox image: %v %s", err, out)
	}
}
