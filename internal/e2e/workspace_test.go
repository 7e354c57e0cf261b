package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

func edit(path, search, replace string) string {
	return "```path=" + path + "\n<<<<<<< SEARCH\n" + search + "\n=======\n" + replace + "\n>>>>>>> REPLACE\n```\n"
}

// TestExistingWorkspaceRollbackAndExport: the agent works on an existing
// project with a failing test; its first edit is wrong, a person rolls the
// task back to checkpoint 1 with guidance mid-run, the next edit fixes it,
// and export shows only the intended change.
func TestExistingWorkspaceRollbackAndExport(t *testing.T) {
	t.Parallel()
	c := newCluster(t, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: "1. Fix add in calc.py."}},
		// A person's guidance comes with the failure report after the
		// rollback: that rule goes first.
		llmtest.Rule{Contains: "use plus", Reply: llmtest.Reply{Content: edit("calc.py", "    return a * b", "    return a + b")}},
		llmtest.Rule{Contains: retryMarker, Reply: llmtest.Reply{Content: "add multiplies; looking further.", Delay: 3 * time.Second}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: edit("calc.py", "    return a - b", "    return a * b")}},
	))

	proj := t.TempDir()
	files := map[string]string{
		"calc.py":      "\"\"\"Arithmetic helpers.\"\"\"\n\n\ndef add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n",
		"test_calc.py": "from calc import add, neg\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_neg():\n    assert neg(2) == -2\n",
		"README.md":    "calc\n",
		".gitignore":   "*.log\n",
		"debug.log":    "ignored\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	id := c.start("--dir", proj, "--test-cmd", "python3 -m pytest -q", "Fix the failing test in calc.py")
	c.waitFor(id, "the first checkpoint", func(st workflows.Status) bool {
		return len(st.Checkpoints) == 1 && st.Phase == workflows.PhaseReflecting
	})
	out := c.mustCLI("rollback", id, "--to", "1", "--feedback", "use plus", "--json")
	if !strings.Contains(out, `"checkpoint`) && !strings.Contains(out, `"checkpoints"`) {
		t.Errorf("rollback printed no status: %s", out)
	}
	if _, errOut, code := c.cli("rollback", id, "--to", "7"); code == 0 || !strings.Contains(errOut, "unknown checkpoint 7") {
		t.Errorf("rollback to an unknown checkpoint: exit %d, %s", code, errOut)
	}

	st := c.waitFor(id, "success", phase(workflows.PhaseSucceeded))
	if len(st.Checkpoints) != 2 || st.Checkpoints[0].Passed || !st.Checkpoints[1].Passed {
		t.Fatalf("checkpoints = %+v, want the wrong edit then the fix", st.Checkpoints)
	}
	if st.TestsByModel {
		t.Error("a --test-cmd task reports model-written tests")
	}

	patch := c.mustCLI("export", id, "--patch")
	for _, want := range []string{"--- a/calc.py", "+++ b/calc.py", "-    return a - b", "+    return a + b"} {
		if !strings.Contains(patch, want) {
			t.Errorf("patch lacks %q:\n%s", want, patch)
		}
	}
	if strings.Contains(patch, "test_calc.py") || strings.Contains(patch, "a * b") || strings.Count(patch, "\n+") != 2 {
		t.Errorf("patch has more than the intended change:\n%s", patch)
	}

	repo := filepath.Join(t.TempDir(), "repo")
	c.mustCLI("export", id, repo, "--git")
	log, err := exec.Command("git", "-C", repo, "log", "--format=%s").Output()
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	want := "checkpoint 2: step 1, iteration 2: tests passed\ncheckpoint 1: step 1, iteration 1: tests failed: test_calc.py::test_add\ninput workspace\n"
	if string(log) != want {
		t.Errorf("git log:\n%s\nwant:\n%s", log, want)
	}
	if b, err := os.ReadFile(filepath.Join(repo, "calc.py")); err != nil || !strings.Contains(string(b), "return a + b") {
		t.Errorf("exported calc.py: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "debug.log")); err == nil {
		t.Error("a .gitignore'd file was uploaded")
	}
}
