package starter

import (
	"bytes"
	"context"
	"fmt"

	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// writeSnapshot writes a task's files to dir, all or nothing, keeping the
// user's tests (unless test edits were allowed) and, unless the user asked
// for the files with export, configuration that tools run on their own.
// It returns how many files it wrote: files already on disk as they are
// in the snapshot are left alone.
func writeSnapshot(ctx context.Context, f *Factory, taskID string, task workflows.Status, snapshotID, dir string, holdBack bool) (int, error) {
	st, err := f.Store(ctx)
	if err != nil {
		return 0, err
	}
	files, err := loadSnapshot(ctx, st, snapshotID)
	if err != nil {
		return 0, err
	}
	var input []workspace.File
	if task.InputSnapshot != "" {
		if input, err = st.GetSnapshot(ctx, task.InputSnapshot); err != nil {
			return 0, fmt.Errorf("read input snapshot %s: %w", task.InputSnapshot, err)
		}
	}
	if files, err = leaveOutSetup(ctx, st, task, input, files); err != nil {
		return 0, err
	}
	files = keepUsersTests(task, input, files, f.IO.ErrOut)
	if holdBack {
		files = holdBackSelfRunning(taskID, selfRunning{hookDirs: hookDirsOf(ctx, dir)}, input, files, f.IO.ErrOut)
	}
	written, err := workspace.WriteDirChanges(dir, files)
	if err != nil {
		return 0, fmt.Errorf("write the files of task %s to %s: %w\n"+
			"The task's files are kept: fix the paths named above, or write them elsewhere with `autocoder export %s DIR`",
			taskID, dir, err, taskID)
	}
	return written, nil
}

// snapshotReader is the part of the store that writing snapshots to disk
// needs.
type snapshotReader interface {
	GetSnapshot(ctx context.Context, id string) ([]workspace.File, error)
	GetManifest(ctx context.Context, id string) (store.Manifest, error)
}

// loadSnapshot reads a snapshot to be written to disk; an empty id is the
// empty workspace, as the activities read it. A snapshot stored before
// today's path rules (one holding .git/config, say) is refused as a whole
// rather than written in part.
func loadSnapshot(ctx context.Context, st snapshotReader, id string) ([]workspace.File, error) {
	if id == "" {
		return nil, nil
	}
	files, err := st.GetSnapshot(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", id, err)
	}
	return files, writable(id, files)
}

// checkSnapshot is loadSnapshot's check without reading any content.
func checkSnapshot(ctx context.Context, st snapshotReader, id string) error {
	if id == "" {
		return nil
	}
	m, err := st.GetManifest(ctx, id)
	if err != nil {
		return fmt.Errorf("read snapshot %s: %w", id, err)
	}
	files := make([]workspace.File, len(m.Entries))
	for i, e := range m.Entries {
		files[i].Path = e.Path
	}
	return writable(id, files)
}

func writable(id string, files []workspace.File) error {
	if err := (workspace.Limits{}).Check(files); err != nil {
		return fmt.Errorf("snapshot %s cannot be written to disk: %w; "+
			"it was stored by an older autocoder: export another checkpoint with --checkpoint N", id, err)
	}
	return nil
}

// taskStart is the snapshot a task started from: its input, with the
// project's setup's changes once it ran. The task's changes are told
// against it.
func taskStart(st workflows.Status) string {
	if st.Setup != nil {
		return st.Setup.Snapshot
	}
	return st.InputSnapshot
}

// leaveOutSetup takes out of files what the project's setup did that the
// task then left as it was: the setup's changes are where the task
// started, not its work, and the person's own setup makes them. A file it
// changed is written as the input had it, one it made is not written.
func leaveOutSetup(ctx context.Context, st snapshotReader, task workflows.Status, input, files []workspace.File) ([]workspace.File, error) {
	if task.Setup == nil || task.Setup.Changed == 0 {
		return files, nil
	}
	setup, err := loadSnapshot(ctx, st, task.Setup.Snapshot)
	if err != nil {
		return nil, err
	}
	writes, _ := workspace.Changes(input, setup)
	made := workspace.ByPath(writes)
	was := workspace.ByPath(input)
	out := make([]workspace.File, 0, len(files))
	for _, f := range files {
		m, ok := made[f.Path]
		if !ok || m.FileMode() != f.FileMode() || !bytes.Equal(m.Data, f.Data) {
			out = append(out, f)
		} else if prev, had := was[f.Path]; had {
			out = append(out, prev)
		}
	}
	return out, nil
}
