package starter

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

type exportOptions struct {
	checkpoint int
	git        bool
	patch      bool
}

func newExportCmd(f *factory) *cobra.Command {
	var o exportOptions
	cmd := &cobra.Command{
		Use:   "export ID [DIR]",
		Short: "Write a task's files (--git: one commit per checkpoint; --patch: diff against the input)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 2 {
				dir = args[1]
			}
			if dir == "" && !o.patch {
				return usageError("export needs a directory unless --patch is given")
			}
			return exportTask(cmd.Context(), f, args[0], dir, o)
		},
	}
	cmd.Flags().IntVar(&o.checkpoint, "checkpoint", 0, "checkpoint to export (default: the last passing one, else the last)")
	cmd.Flags().BoolVar(&o.git, "git", false, "make DIR a git repository with one commit per checkpoint up to the exported one")
	cmd.Flags().BoolVar(&o.patch, "patch", false, "print a unified diff of the exported files against the input workspace")
	return cmd
}

func exportTask(ctx context.Context, f *factory, id, dir string, o exportOptions) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	st, err := queryStatus(ctx, c, id)
	if err != nil {
		return fmt.Errorf("query task %s: %w", id, err)
	}
	cp, err := pickCheckpoint(st, o.checkpoint)
	if err != nil {
		return err
	}
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	load := func(snapshot string) ([]workspace.File, error) {
		if snapshot == "" {
			return nil, nil
		}
		files, err := store.GetSnapshot(ctx, snapshot)
		if err != nil {
			return nil, fmt.Errorf("read snapshot %s: %w", snapshot, err)
		}
		return files, nil
	}
	if dir != "" {
		if o.git {
			err = exportGit(ctx, dir, st, cp.N, load)
		} else {
			var files []workspace.File
			if files, err = load(cp.SnapshotID); err == nil {
				err = workspace.WriteDir(dir, files)
			}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(f.stderr, "exported checkpoint #%d of task %s to %s\n", cp.N, id, dir)
	}
	if o.patch {
		before, err := load(st.InputSnapshot)
		if err != nil {
			return err
		}
		after, err := load(cp.SnapshotID)
		if err != nil {
			return err
		}
		return writePatch(ctx, f.stdout, st, before, after)
	}
	return nil
}

func pickCheckpoint(st workflows.Status, n int) (workflows.Checkpoint, error) {
	cps := st.Checkpoints
	if len(cps) == 0 {
		return workflows.Checkpoint{}, fmt.Errorf("%w: the task has no checkpoints yet", errTaskFailed)
	}
	if n != 0 {
		if n < 1 || n > len(cps) {
			return workflows.Checkpoint{}, usageError("--checkpoint %d: the task has checkpoints 1 to %d", n, len(cps))
		}
		return cps[n-1], nil
	}
	for i := len(cps) - 1; i >= 0; i-- {
		if cps[i].Passed {
			return cps[i], nil
		}
	}
	return cps[len(cps)-1], nil
}

// exportGit records the input and checkpoints 1..upTo as commits, leaving
// the work tree at checkpoint upTo.
func exportGit(ctx context.Context, dir string, st workflows.Status, upTo int, load func(string) ([]workspace.File, error)) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return usageError("--git: %s is not empty", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	repo := gitRepo{dir: dir}
	if err := repo.run(ctx, "init", "-q"); err != nil {
		return err
	}
	commit := func(snapshot, msg string) error {
		files, err := load(snapshot)
		if err != nil {
			return err
		}
		if err := repo.replaceTree(files); err != nil {
			return err
		}
		if err := repo.run(ctx, "add", "-A"); err != nil {
			return err
		}
		return repo.run(ctx, "commit", "-q", "--allow-empty", "-m", msg)
	}
	if err := commit(st.InputSnapshot, "input workspace\n\nTask: "+st.Task); err != nil {
		return err
	}
	for _, cp := range st.Checkpoints[:upTo] {
		result := "tests failed"
		if cp.Passed {
			result = "tests passed"
		}
		msg := fmt.Sprintf("checkpoint %d: step %d, iteration %d: %s\n\n%s", cp.N, cp.Step, cp.Iteration, cp.Summary, result)
		if err := commit(cp.SnapshotID, msg); err != nil {
			return err
		}
	}
	return nil
}

// unifiedDiff diffs two file sets with git in a scratch repository.
func unifiedDiff(ctx context.Context, before, after []workspace.File) ([]byte, error) {
	dir, err := os.MkdirTemp("", "autocoder-diff-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	repo := gitRepo{dir: dir}
	if err := repo.run(ctx, "init", "-q"); err != nil {
		return nil, err
	}
	if err := repo.replaceTree(before); err != nil {
		return nil, err
	}
	if err := repo.run(ctx, "add", "-A"); err != nil {
		return nil, err
	}
	if err := repo.run(ctx, "commit", "-q", "--allow-empty", "-m", "before"); err != nil {
		return nil, err
	}
	if err := repo.replaceTree(after); err != nil {
		return nil, err
	}
	if err := repo.run(ctx, "add", "-A"); err != nil {
		return nil, err
	}
	return repo.output(ctx, "diff", "--cached", "--no-color", "--no-ext-diff")
}

type gitRepo struct{ dir string }

func (g gitRepo) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=autocoder", "GIT_AUTHOR_EMAIL=autocoder@localhost",
		"GIT_COMMITTER_NAME=autocoder", "GIT_COMMITTER_EMAIL=autocoder@localhost",
		"GIT_CONFIG_NOSYSTEM=1")
	return cmd
}

func (g gitRepo) run(ctx context.Context, args ...string) error {
	_, err := g.output(ctx, args...)
	return err
}

func (g gitRepo) output(ctx context.Context, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := g.command(ctx, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}

// replaceTree makes the work tree hold exactly files.
func (g gitRepo) replaceTree(files []workspace.File) error {
	entries, err := os.ReadDir(g.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(g.dir, e.Name())); err != nil {
			return err
		}
	}
	return workspace.WriteDir(g.dir, files)
}
