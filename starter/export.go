package starter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// ExportOptions are export's arguments.
type ExportOptions struct {
	ID         string
	Dir        string
	Checkpoint int
	Git        bool
	Patch      bool
	// Transcript is a file for the task's conversations, as JSON.
	Transcript string
}

func NewCmdExport(f *Factory, runF func(*ExportOptions) error) *cobra.Command {
	var o ExportOptions
	cmd := &cobra.Command{
		Use:   "export ID [DIR]",
		Short: "Write a task's files (--git: one commit per checkpoint; --patch: diff against the input; --transcript: its conversations)",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if len(args) == 2 {
				o.Dir = args[1]
			}
			if o.Dir == "" && !o.Patch && o.Transcript == "" {
				return usageError("export needs a directory unless --patch or --transcript is given")
			}
			if runF != nil {
				return runF(&o)
			}
			return exportTask(cmd.Context(), f, o)
		},
	}
	cmd.Flags().IntVar(&o.Checkpoint, "checkpoint", 0, "checkpoint to export (default: the last passing one, else the last)")
	cmd.Flags().BoolVar(&o.Git, "git", false, "make DIR a git repository with one commit per checkpoint up to the exported one")
	cmd.Flags().BoolVar(&o.Patch, "patch", false, "print a unified diff of the exported files against the input workspace")
	cmd.Flags().StringVar(&o.Transcript, "transcript", "", "also write the task's conversations to this file, as 'autocoder transcript --json' prints them")
	return cmd
}

func exportTask(ctx context.Context, f *Factory, o ExportOptions) error {
	c, err := f.TaskClient(ctx)
	if err != nil {
		return err
	}
	id := o.ID
	st, err := c.Status(ctx, id)
	if err != nil {
		return fmt.Errorf("query task %s: %w", id, err)
	}
	store, err := f.Store(ctx)
	if err != nil {
		return err
	}
	if o.Transcript != "" {
		if err := exportTranscript(ctx, f, st, store, o.Transcript); err != nil {
			return err
		}
		if o.Dir == "" && !o.Patch {
			return nil
		}
	}
	cp, err := pickCheckpoint(st, o.Checkpoint)
	if err != nil {
		return err
	}
	if o.Dir != "" {
		if o.Git {
			err = exportGit(ctx, o.Dir, st, cp.N, store)
		} else {
			_, err = writeSnapshot(ctx, f, id, st, cp.SnapshotID, o.Dir, false)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(f.IO.ErrOut, "exported checkpoint #%d of task %s to %s\n", cp.N, id, o.Dir)
	}
	if o.Dir != "" || o.Patch {
		fmt.Fprintf(f.IO.ErrOut, "the task's model calls: %s\n", usageText(st.Usage))
		printModelUsage(f.IO.ErrOut, "  ", st.Usage)
	}
	if o.Dir != "" || o.Patch {
		reviewWarnings(f.IO.ErrOut, cp)
	}
	if o.Patch {
		return writeCheckpointPatch(ctx, f.IO.Out, f.IO.OutTTY, st, cp, store)
	}
	return nil
}

// writeCheckpointPatch writes checkpoint cp's changes against where the
// task started (taskStart: the project's setup's changes are not the
// task's) as a unified diff (see writePatch).
func writeCheckpointPatch(ctx context.Context, w io.Writer, forTerminal bool, st workflows.Status, cp workflows.Checkpoint, snapshots snapshotReader) error {
	before, err := loadSnapshot(ctx, snapshots, taskStart(st))
	if err != nil {
		return err
	}
	after, err := loadSnapshot(ctx, snapshots, cp.SnapshotID)
	if err != nil {
		return err
	}
	return writePatch(ctx, w, forTerminal, st, before, after)
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
// the work tree at checkpoint upTo. Every snapshot is checked before
// anything is written, and the repository is built next to dir and renamed
// into place, so a failure leaves dir as it was.
func exportGit(ctx context.Context, dir string, st workflows.Status, upTo int, snapshots snapshotReader) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return usageError("--git: %s is not empty", dir)
	}
	type commit struct{ snapshot, msg string }
	commits := []commit{{st.InputSnapshot, "input workspace\n\nTask: " + st.Task}}
	if su := st.Setup; su != nil && su.Changed > 0 {
		commits = append(commits, commit{su.Snapshot, "setup: " + su.Command + "\n\n" + su.Note})
	}
	for _, cp := range st.Checkpoints[:upTo] {
		result := "tests failed"
		if cp.Passed {
			result = "tests passed"
		}
		commits = append(commits, commit{cp.SnapshotID, fmt.Sprintf("checkpoint %d: step %d, iteration %d: %s\n\n%s", cp.N, cp.Step, cp.Iteration, cp.Summary, result)})
	}
	for _, c := range commits {
		if err := checkSnapshot(ctx, snapshots, c.snapshot); err != nil {
			return err
		}
	}

	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, ".autocoder-export-")
	if err != nil {
		return fmt.Errorf("create a directory next to %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp) // gone once renamed; removes a failed attempt
	repo := gitRepo{dir: tmp}
	if err := repo.init(ctx); err != nil {
		return err
	}
	for _, c := range commits {
		files, err := loadSnapshot(ctx, snapshots, c.snapshot)
		if err != nil {
			return err
		}
		if err := repo.commitTree(ctx, files, c.msg); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	// rename replaces an empty directory and fails on anything else.
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("move the repository into %s: %w", dir, err)
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
	if err := repo.init(ctx); err != nil {
		return nil, err
	}
	if err := repo.commitTree(ctx, before, "before"); err != nil {
		return nil, err
	}
	if err := repo.stageTree(ctx, after); err != nil {
		return nil, err
	}
	return repo.output(ctx, "diff", "--cached", "--text", "--no-color", "--no-ext-diff", "--no-textconv")
}

// gitRepo runs git in a repository autocoder made. Its files come from the
// workspace, so git must not execute anything they, or any configuration,
// could name: git sees no GIT_* variable of ours, no system or user
// configuration, and settings that switch off every command git would run
// on its own (hooks, fsmonitor, external diff, signing, background
// maintenance). The workspace never holds .git (workspace.CleanPath), so
// the repository's own configuration is the one git init wrote.
type gitRepo struct{ dir string }

// gitSafety are the -c settings every git command gets; command-line
// settings win over every configuration file.
var gitSafety = []string{
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "core.fsmonitor=false",
	"-c", "core.attributesFile=" + os.DevNull,
	"-c", "core.excludesFile=" + os.DevNull,
	"-c", "core.pager=cat",
	"-c", "diff.external=",
	"-c", "commit.gpgSign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "protocol.allow=never",
}

func (g gitRepo) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append(slices.Clone(gitSafety), args...)...)
	cmd.Dir = g.dir
	cmd.Env = append(withoutGitEnv(os.Environ()),
		"GIT_DIR="+filepath.Join(g.dir, ".git"), "GIT_WORK_TREE="+g.dir,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_SYSTEM="+os.DevNull, "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=autocoder", "GIT_AUTHOR_EMAIL=autocoder@localhost",
		"GIT_COMMITTER_NAME=autocoder", "GIT_COMMITTER_EMAIL=autocoder@localhost")
	return cmd
}

// withoutGitEnv drops the variables that steer git (GIT_DIR,
// GIT_EXTERNAL_DIFF, GIT_CONFIG_PARAMETERS, ...) from env.
func withoutGitEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
}

// exactAttributes overrides, from the repository's info/attributes (which
// wins over every .gitattributes in the tree), what a task's own
// .gitattributes could do to its files: line-ending and encoding
// conversion, filters, and marking text as binary to hide it from a diff.
const exactAttributes = "* -text diff -ident !eol !filter !working-tree-encoding\n"

// init makes the repository, with the task's files to be stored and shown
// byte for byte.
func (g gitRepo) init(ctx context.Context) error {
	if err := g.run(ctx, "init", "-q"); err != nil {
		return err
	}
	info := filepath.Join(g.dir, ".git", "info")
	if err := os.MkdirAll(info, 0o755); err != nil {
		return fmt.Errorf("git repository: %w", err)
	}
	if err := os.WriteFile(filepath.Join(info, "attributes"), []byte(exactAttributes), 0o644); err != nil {
		return fmt.Errorf("git repository: %w", err)
	}
	return nil
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

// stageTree makes the work tree and the index hold exactly files.
func (g gitRepo) stageTree(ctx context.Context, files []workspace.File) error {
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
	if err := workspace.WriteDir(g.dir, files); err != nil {
		return err
	}
	return g.run(ctx, "add", "-A", "--force") // a task's .gitignore must not hide its files
}

// commitTree commits exactly files.
func (g gitRepo) commitTree(ctx context.Context, files []workspace.File, msg string) error {
	if err := g.stageTree(ctx, files); err != nil {
		return err
	}
	return g.run(ctx, "commit", "-q", "--allow-empty", "--no-verify", "-m", msg)
}
