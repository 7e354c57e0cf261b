package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/testenv"
)

// installAgent adds greetlib with the install tool, runs the tests, and
// finishes; seen gets the tools each turn offers and the results it is
// sent of the last.
func installAgent(seen func(turn int, tools []string, results string)) agent {
	return func(v turnView) llmtest.Reply {
		seen(v.turn(), v.tools, strings.Join(v.lastResults(), "\n"))
		switch v.turn() {
		case 0:
			return calls(v, "", call("install", map[string]any{"packages": []string{"greetlib==1.0"}}))
		case 1:
			return calls(v, "", call("run_tests", map[string]any{}))
		case 2:
			return calls(v, "", call("finish", map[string]any{"summary": "greetlib is declared; greeting uses it."}))
		}
		return llmtest.Fail("unexpected turn %d; the last user message:\n%s", v.turn(), clipText(v.last, 2000))
	}
}

// TestLocalInstallTool: in local mode on the bubblewrap backend, through
// the autocoder executable, a scripted model whose project imports a
// package it does not declare adds it with the install tool, from a PEP
// 503 index the test serves (the configured index, reached through the
// egress proxy): the requirement lands in requirements.txt, run_tests
// then installs it and the tests pass, the task succeeds, and the
// delivered project declares the package.
func TestLocalInstallTool(t *testing.T) {
	t.Parallel()
	const task = "Declare the package greet.py imports"
	removeNewInstalls(t)
	name, whl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
	index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
	var mu sync.Mutex
	offered := map[int][]string{}
	results := map[int]string{}
	model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply {
		return installAgent(func(turn int, tools []string, r string) {
			mu.Lock()
			defer mu.Unlock()
			offered[turn], results[turn] = tools, r
		}).answer("1. Declare greetlib.", chatView(req))
	})
	l := newLocalOf(t, testenv.BinaryCgo(t, false), model, "AUTOCODER_SANDBOX=bwrap",
		"AUTOCODER_REGISTRY_INDEXES=python="+index.URL(), "AUTOCODER_PRIVATE_REGISTRIES="+index.Host())
	dir := t.TempDir()
	writeProject(t, dir, map[string]string{
		"greet.py":      "import greetlib\n\n\ndef greeting():\n    return greetlib.hello()\n",
		"test_greet.py": "from greet import greeting\n\n\ndef test_greeting():\n    assert greeting() == 'hello from greetlib'\n",
	})
	st := runInLocalMode(t, l, dir, "python", task)
	mu.Lock()
	defer mu.Unlock()
	install, tests := results[1], results[2]
	t.Logf("install:\n%s\nrun_tests:\n%s\nlast check: %s", install, tests, st.LastTest.Deps)
	if !slices.Contains(offered[0], "install") {
		t.Errorf("the first turn offered %q", offered[0])
	}
	if !strings.Contains(install, "added greetlib==1.0") || !strings.Contains(install, "files changed: requirements.txt (new)") {
		t.Errorf("the install's result:\n%s", install)
	}
	if !strings.Contains(tests, "1 passed") {
		t.Errorf("run_tests after the install:\n%s", tests)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "requirements.txt")); string(got) != "greetlib==1.0\n" {
		t.Errorf("the delivered requirements.txt: %q", got)
	}
	if n := index.Downloads(); n < 2 {
		t.Errorf("wheel downloads: %d, want the install's check and run_tests' install", n)
	}
}
