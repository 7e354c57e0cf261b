package starter

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/workspace"
)

// selfRunningDirs are directories, at any depth and in any case, whose
// files a tool on the user's machine runs without being asked: editor
// tasks and settings (run when the folder is opened), dev containers, and
// the hook directories of commit-hook managers and of git's usual
// core.hooksPath, and autocoder's own, whose setup script the next run on
// the project runs, with the network.
var selfRunningDirs = []string{
	".vscode", ".idea", ".fleet", ".zed", ".devcontainer",
	".husky", ".lefthook", ".githooks", ".autocoder",
}

// selfRunningFiles are such files by name, at any depth and in any case:
// dev containers, direnv and mise, the vim family's per-directory
// configuration, and the commit-hook managers' configuration (pre-commit,
// lefthook, husky, simple-git-hooks, overcommit).
var selfRunningFiles = []string{
	".devcontainer.json", ".envrc", ".mise.toml", "mise.toml", ".exrc", ".nvimrc", ".nvim.lua",
	".pre-commit-config.yaml", ".pre-commit-config.yml",
	"lefthook.yml", "lefthook.yaml", "lefthook.json", "lefthook.toml",
	".lefthook.yml", ".lefthook.yaml", ".lefthook.json", ".lefthook.toml",
	"lefthook-local.yml", "lefthook-local.yaml", ".lefthook-local.yml", ".lefthook-local.yaml",
	".huskyrc", ".huskyrc.json", ".huskyrc.js", "husky.config.js",
	".simple-git-hooks.json", ".simple-git-hooks.js", ".simple-git-hooks.cjs", "simple-git-hooks.json",
	".overcommit.yml",
}

// selfRunning tells the files that tools on the user's machine run on
// their own: the names above, and whatever lies in the directories that
// the project's own git configuration names as hook directories.
type selfRunning struct {
	hookDirs []string // slash-separated, relative to the directory written
}

// runsOnItsOwn reports whether a tool may run what the file at p says
// without being asked.
func (s selfRunning) runsOnItsOwn(p string) bool {
	parts := strings.Split(p, "/")
	for _, part := range parts[:len(parts)-1] {
		if slices.ContainsFunc(selfRunningDirs, func(d string) bool { return strings.EqualFold(d, part) }) {
			return true
		}
	}
	if slices.ContainsFunc(selfRunningFiles, func(n string) bool { return strings.EqualFold(n, parts[len(parts)-1]) }) {
		return true
	}
	return slices.ContainsFunc(s.hookDirs, func(d string) bool {
		return d == "" || strings.HasPrefix(strings.ToLower(p), strings.ToLower(d)+"/")
	})
}

// hookDirsOf asks git where the repository holding dir runs its hooks from
// (core.hooksPath, which may name any directory of the project) and
// returns that directory relative to dir when it lies inside it. Without
// git, a repository or such a setting there is nothing to add.
func hookDirsOf(ctx context.Context, dir string) []string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	gitOut := func(args ...string) string {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	hooks := gitOut("config", "--get", "core.hooksPath")
	if hooks == "" {
		return nil
	}
	if !filepath.IsAbs(hooks) {
		top := gitOut("rev-parse", "--show-toplevel")
		if top == "" {
			return nil
		}
		hooks = filepath.Join(top, hooks)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	abs, _ = filepath.EvalSymlinks(abs)
	rel, err := filepath.Rel(abs, hooks)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	if rel == "." {
		return []string{""}
	}
	return []string{filepath.ToSlash(rel)}
}

// holdBackSelfRunning keeps files that tools run on their own as they were
// in input: the task's new or changed ones are not written to the user's
// directory, and w says which and how to get them after a review. It also
// names the files the task made executable.
func holdBackSelfRunning(taskID string, s selfRunning, input, files []workspace.File, w io.Writer) []workspace.File {
	before := workspace.ByPath(input)
	var held, madeExecutable []string
	kept := files[:0:0]
	for _, f := range files {
		in, had := before[f.Path]
		if s.runsOnItsOwn(f.Path) {
			if !had || string(in.Data) != string(f.Data) || in.FileMode() != f.FileMode() {
				held = append(held, f.Path)
				if had {
					kept = append(kept, in)
				}
				continue
			}
		}
		if f.FileMode()&0o111 != 0 && (!had || in.FileMode()&0o111 == 0) {
			madeExecutable = append(madeExecutable, f.Path)
		}
		kept = append(kept, f)
	}
	if len(held) > 0 {
		fmt.Fprintf(w, "held back %s: tools run such files on their own (when the folder is opened, at the next commit, or at autocoder's next run); "+
			"review them with `autocoder export %s --patch`, then write them with `autocoder export %s DIR`\n",
			termsafe.Line(strings.Join(held, ", ")), taskID, taskID)
	}
	if len(madeExecutable) > 0 {
		fmt.Fprintf(w, "made executable by the task: %s\n", termsafe.Line(strings.Join(madeExecutable, ", ")))
	}
	return kept
}
