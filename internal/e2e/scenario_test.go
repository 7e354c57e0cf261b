package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// scenario is a small task whose scripted model gets it wrong once: the
// first code has a bug, the tests catch it, reflection names it, and the
// second code is right.
type scenario struct {
	lang       string
	task       string
	plan       string
	buggy      string
	reflection string
	fixed      string
	// want maps output paths to a substring the final file must hold.
	want map[string]string
}

// Markers in the prompts the activities build (activities/prompts.go).
const (
	planMarker    = "Write a short plan"
	reflectMarker = "Reflect before the next attempt"
)

// script answers plan, generate and reflect requests. Reflection replies are
// held back a little so a status query can observe the reflecting phase.
func (s scenario) script() llmtest.Script {
	return llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: s.plan}},
		llmtest.Rule{Contains: reflectMarker, Reply: llmtest.Reply{Content: s.reflection, Delay: 1500 * time.Millisecond}},
		llmtest.Rule{Contains: firstLine(s.reflection), Reply: llmtest.Reply{Content: s.fixed}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: s.buggy}},
	)
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func fence(path, body string) string { return "```path=" + path + "\n" + body + "```\n" }

var pythonScenario = scenario{
	lang: "python",
	task: "Write a function add(a, b) in calc.py that returns the sum, with pytest tests.",
	plan: "1. Implement add in calc.py with pytest tests in test_calc.py.",
	buggy: "Here is the code.\n\n" +
		fence("calc.py", "def add(a, b):\n    return a - b\n") +
		fence("test_calc.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"),
	reflection: "Root cause: add subtracts b instead of adding it (calc.py line 2).\n" +
		"Hypothesis: the operator is wrong.\nFix: return a + b.",
	fixed: fence("calc.py", "def add(a, b):\n    return a + b\n"),
	want:  map[string]string{"calc.py": "return a + b", "test_calc.py": "def test_add"},
}

var goScenario = scenario{
	lang: "go",
	task: "Write a Go package calc with func Add(a, b int) int, with tests.",
	plan: "1. Create module example.com/calc with Add and a table test.",
	buggy: fence("go.mod", "module example.com/calc\n\ngo 1.21\n") +
		fence("calc.go", "package calc\n\n// Add returns the sum of a and b.\nfunc Add(a, b int) int { return a * b }\n") +
		fence("calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n"),
	reflection: "Root cause: Add multiplies instead of adding (calc.go line 4).\n" +
		"Hypothesis: wrong operator.\nFix: return a + b.",
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
