package starter

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// hostileGitSetup points every configuration and variable git reads at a
// command that creates the returned canary file.
func hostileGitSetup(t *testing.T) (canary string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	dir := t.TempDir()
	canary = filepath.Join(dir, "canary")
	touch := "touch " + canary
	hooks := filepath.Join(dir, "hooks")
	must(t, os.Mkdir(hooks, 0o755))
	for _, hook := range []string{"pre-commit", "post-commit", "commit-msg", "post-checkout"} {
		must(t, os.WriteFile(filepath.Join(hooks, hook), []byte("#!/bin/sh\n"+touch+"\n"), 0o755))
	}
	config := "[core]\n\tfsmonitor = \"" + touch + "; false\"\n\thooksPath = " + hooks + "\n\tpager = " + touch + "\n" +
		"[diff]\n\texternal = " + filepath.Join(hooks, "pre-commit") + "\n"
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(filepath.Join(home, ".config", "git"), 0o755))
	must(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(config), 0o644))
	must(t, os.WriteFile(filepath.Join(home, ".config", "git", "config"), []byte(config), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "global"), []byte(config), 0o644))
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(dir, "global"))
	t.Setenv("GIT_EXTERNAL_DIFF", filepath.Join(hooks, "pre-commit"))
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
	t.Setenv("GIT_CONFIG_VALUE_0", touch+"; false")
	return canary
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func noCanary(t *testing.T, canary, when string) {
	t.Helper()
	if _, err := os.Stat(canary); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s ran a command from git configuration (canary: %v)", when, err)
	}
}

// TestExportRunsGitWithoutAnyConfiguration: --patch and --git run git
// with none of the user's or the environment's configuration, so nothing
// it names is executed, and the results are still right.
func TestExportRunsGitWithoutAnyConfiguration(t *testing.T) {
	canary := hostileGitSetup(t)
	ctx := context.Background()
	before := []workspace.File{{Path: "calc.py", Data: []byte("def add(a, b):\n    return a - b\n")}}
	after := []workspace.File{{Path: "calc.py", Data: []byte("def add(a, b):\n    return a + b\n")}}

	diff, err := unifiedDiff(ctx, before, after)
	if err != nil {
		t.Fatal(err)
	}
	noCanary(t, canary, "export --patch")
	if !strings.Contains(string(diff), "+    return a + b") {
		t.Errorf("diff:\n%s", diff)
	}

	snapshots := fixedSnapshots{"in": before, "cp1": after}
	st := workflows.Status{Task: "fix add", InputSnapshot: "in", Checkpoints: []workflows.Checkpoint{{N: 1, SnapshotID: "cp1", Passed: true}}}
	repo := filepath.Join(t.TempDir(), "repo")
	must(t, exportGit(ctx, repo, st, 1, snapshots))
	noCanary(t, canary, "export --git")
	got, err := os.ReadFile(filepath.Join(repo, "calc.py"))
	if err != nil || !strings.Contains(string(got), "a + b") {
		t.Errorf("exported calc.py: %q, %v", got, err)
	}
	entries, err := os.ReadDir(filepath.Dir(repo))
	if err != nil || len(entries) != 1 {
		t.Errorf("export --git left %v next to the repository (%v)", entries, err)
	}
}

// TestExportRefusesVersionControlMetadata: a file set holding .git/config
// (a snapshot stored before the path rules) is never written: --patch
// fails without running git over it, and --git fails before creating DIR.
func TestExportRefusesVersionControlMetadata(t *testing.T) {
	canary := hostileGitSetup(t)
	ctx := context.Background()
	hostile := []workspace.File{
		{Path: "calc.py", Data: []byte("x = 1\n")},
		{Path: ".git/config", Data: []byte("[core]\n\tfsmonitor = \"touch " + canary + "\"\n")},
	}
	if _, err := unifiedDiff(ctx, nil, hostile); !errors.Is(err, workspace.ErrVCSMetadata) {
		t.Errorf("patch of a snapshot with .git/config: %v, want ErrVCSMetadata", err)
	}
	noCanary(t, canary, "export --patch")

	st := workflows.Status{InputSnapshot: "in", Checkpoints: []workflows.Checkpoint{{N: 1, SnapshotID: "cp1"}}}
	repo := filepath.Join(t.TempDir(), "repo")
	if err := exportGit(ctx, repo, st, 1, fixedSnapshots{"cp1": hostile}); !errors.Is(err, workspace.ErrVCSMetadata) {
		t.Errorf("export --git of a snapshot with .git/config: %v, want ErrVCSMetadata", err)
	}
	noCanary(t, canary, "export --git")
	if entries, _ := os.ReadDir(filepath.Dir(repo)); len(entries) != 0 {
		t.Errorf("a failed export --git left %v", entries)
	}
}

// fixedSnapshots serves snapshots by id; an unknown id is empty.
type fixedSnapshots map[string][]workspace.File

func (s fixedSnapshots) GetSnapshot(_ context.Context, id string) ([]workspace.File, error) {
	return s[id], nil
}

func (s fixedSnapshots) GetManifest(_ context.Context, id string) (store.Manifest, error) {
	m := store.Manifest{ID: id}
	for _, f := range s[id] {
		m.Entries = append(m.Entries, store.Entry{Path: f.Path, Mode: f.FileMode(), Size: int64(len(f.Data))})
	}
	return m, nil
}

// TestPatchShowsEveryFileExactly: a task's own .gitignore and
// .gitattributes cannot hide a file from the patch, turn a change into
// "Binary files differ" or convert its line endings.
func TestPatchShowsEveryFileExactly(t *testing.T) {
	after := []workspace.File{
		{Path: ".gitignore", Data: []byte("evil.py\n")},
		{Path: ".gitattributes", Data: []byte("*.py -diff\n*.txt text eol=crlf\n")},
		{Path: "calc.py", Data: []byte("def add(a, b):\n    return a + b\n")},
		{Path: "evil.py", Data: []byte("import os\n")},
		{Path: "notes.txt", Data: []byte("one\ntwo\n")},
	}
	diff, err := unifiedDiff(context.Background(), nil, after)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+++ b/evil.py\n", "+import os\n", "+    return a + b\n", "+one\n+two\n"} {
		if !strings.Contains(string(diff), want) {
			t.Errorf("the patch lacks %q:\n%s", want, diff)
		}
	}
	if strings.Contains(string(diff), "Binary files") || strings.Contains(string(diff), "\r") {
		t.Errorf("the task's attributes changed the patch:\n%q", diff)
	}
}
