package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/workflows"
)

// scenario is a small task whose scripted model gets it wrong once: the
// first code has a bug, the tests catch it, the failure is reported in the
// same conversation, and the answer to that report is right.
type scenario struct {
	lang  string
	task  string
	plan  string
	buggy string
	fixed string
	// want maps output paths to a substring the final file must hold.
	want map[string]string
}

// Markers in the prompts: the plan request (activities/prompts.go) and
// the report of a failed check that a retry answers.
const (
	planMarker  = "Write a short plan"
	retryMarker = workflows.RetryMarker
)

// script answers the plan, the first turn and the turn after a failed
// check. The answer to the failure is held back a little so a status query
// can observe the reflecting phase.
func (s scenario) script() llmtest.Script {
	return s.scriptRetryAfter(1500 * time.Millisecond)
}

// scriptRetryAfter is script with the answer to the failure held back for
// delay.
func (s scenario) scriptRetryAfter(delay time.Duration) llmtest.Script {
	return llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: s.plan}},
		llmtest.Rule{Contains: retryMarker, Reply: llmtest.Reply{Content: s.fixed, Delay: delay}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: s.buggy}},
	)
}

func fence(path, body string) string { return "```path=" + path + "\n" + body + "```\n" }

var pythonScenario = scenario{
	lang: "python",
	task: "Write a function add(a, b) in calc.py that returns the sum, with pytest tests.",
	plan: "1. Implement add in calc.py with pytest tests in test_calc.py.",
	buggy: "Here is the code.\n\n" +
		fence("calc.py", "def add(a, b):\n    return a - b\n") +
		fence("test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"),
	fixed: "add subtracted b; it adds now.\n\n" + fence("calc.py", "def add(a, b):\n    return a + b\n"),
	want:  map[string]string{"calc.py": "return a + b", "test_calc.py": "def test_add"},
}

var goScenario = scenario{
	lang: "go",
	task: "Write a Go package calc with func Add(a, b int) int, with tests.",
	plan: "1. Create module example.com/calc with Add and a table test.",
	buggy: fence("go.mod", "module example.com/calc\n\ngo 1.21\n") +
		fence("calc.go", "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int { return a * b }\n") +
		fence("calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n"),
	fixed: "```path=calc.go\n<<<<<<< SEARCH\nfunc Add(a, b int) int { return a * b }\n=======\nfunc Add(a, b int) int { return a + b }\n>>>>>>> REPLACE\n```\n",
	want:  map[string]string{"calc.go": "return a + b", "calc_test.go": "func TestAdd", "go.mod": "module example.com/calc"},
}

var scenarios = []scenario{pythonScenario, goScenario}

func checkFiles(t *testing.T, s scenario, files map[string]string) {
	t.Helper()
	for path, want := range s.want {
		got, ok := files[path]
		if !ok {
			t.Errorf("%s: file %s missing (have %v)", s.lang, path, keys(files))
			continue
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: %s does not contain %q:\n%s", s.lang, path, want, got)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func readDir(t *testing.T, dir string, s scenario) map[string]string {
	t.Helper()
	files := map[string]string{}
	for path := range s.want {
		b, err := os.ReadFile(dir + "/" + path)
		if err != nil {
			t.Errorf("read %s: %v", path, err)
			continue
		}
		files[path] = string(b)
	}
	return files
}
