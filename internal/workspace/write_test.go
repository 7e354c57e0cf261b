package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
)

func TestWriteDirRoundtrip(t *testing.T) {
	root := filepath.Join(t.TempDir(), "out")
	in := []File{
		{Path: "cmd/tool/main.go", Data: []byte("package main\n")},
		{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Path: "private", Mode: 0o600, Data: []byte("s")},
		{Path: "empty"},
	}
	must(t, WriteDir(root, in))
	in[0].Data = []byte("package main // changed\n")
	must(t, WriteDir(root, in)) // overwriting is fine
	got, sum, err := LoadDir(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Skipped) != 0 {
		t.Errorf("left behind %v", sum.Skipped)
	}
	want := slices.Clone(in)
	Sort(want)
	if len(got) != len(want) {
		t.Fatalf("read back %d files, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Mode != want[i].FileMode() || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("file %d = %s %o %q, want %s %o %q", i, got[i].Path, got[i].Mode, got[i].Data,
				want[i].Path, want[i].FileMode(), want[i].Data)
		}
	}
}

// project is a directory with a file that writes replace, one they keep
// and a subdirectory.
func project(t *testing.T) string {
	return tree(t, map[string]string{"main.go": "old main", "keep.txt": "kept", "pkg/a.go": "old a"})
}

// update replaces and adds files in project, new directories included.
var update = []File{
	{Path: "main.go", Data: []byte("new main")},
	{Path: "pkg/a.go", Data: []byte("new a")},
	{Path: "pkg/new/b.go", Data: []byte("new b")},
	{Path: "z.txt", Data: []byte("new z")},
}

// writeWithin runs WriteDir and fails the test if it has not returned
// within a few seconds: opening a named pipe for writing would block.
func writeWithin(t *testing.T, root string, files []File) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- WriteDir(root, files) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("WriteDir blocked for 10s")
		return nil
	}
}

func TestWriteDirRefusesAndChangesNothing(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name  string
		setup func(root string) // makes one of update's targets unwritable
		want  error
		msg   string
	}{
		{"symlinked parent", func(root string) {
			must(t, os.RemoveAll(filepath.Join(root, "pkg")))
			must(t, os.Symlink(outside, filepath.Join(root, "pkg")))
		}, ErrSymlink, "pkg"},
		{"symlink at the file", func(root string) {
			must(t, os.Symlink(filepath.Join(outside, "z"), filepath.Join(root, "z.txt")))
		}, ErrSymlink, "z.txt"},
		{"named pipe at the file", func(root string) {
			fifo := filepath.Join(root, "z.txt")
			must(t, syscall.Mkfifo(fifo, 0o644))
			t.Cleanup(func() { unblock(fifo) })
		}, ErrSpecialFile, "z.txt is a named pipe"},
		{"socket at the file", func(root string) {
			must(t, syscall.Mknod(filepath.Join(root, "z.txt"), syscall.S_IFSOCK|0o644, 0))
		}, ErrSpecialFile, "z.txt is a socket"},
		{"directory at the file", func(root string) {
			must(t, os.Mkdir(filepath.Join(root, "z.txt"), 0o755))
		}, ErrSpecialFile, "z.txt is a directory"},
		{"file where a directory is needed", func(root string) {
			must(t, os.WriteFile(filepath.Join(root, "pkg/new"), []byte("in the way"), 0o644))
		}, nil, "pkg/new is a file where a directory is needed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := project(t)
			tt.setup(root)
			before := testenv.Tree(t, root)
			err := writeWithin(t, root, update)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tt.want, tt.msg)
			}
			if diff := testenv.TreeChanges(before, testenv.Tree(t, root)); len(diff) > 0 {
				t.Errorf("the directory changed: %v", diff)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("wrote outside the root: %v", entries)
			}
		})
	}
}

// unblock opens a named pipe for reading without blocking, which releases
// a writer stuck opening it, so a failing test ends.
func unblock(fifo string) {
	if fh, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		fh.Close()
	}
}

func TestWriteDirReportsEveryProblem(t *testing.T) {
	root := project(t)
	must(t, syscall.Mkfifo(filepath.Join(root, "z.txt"), 0o644))
	must(t, os.Symlink("/etc/passwd", filepath.Join(root, "main.go.bak")))
	files := append(slices.Clone(update), File{Path: "main.go.bak", Data: []byte("x")})
	err := writeWithin(t, root, files)
	if !errors.Is(err, ErrSpecialFile) || !errors.Is(err, ErrSymlink) {
		t.Fatalf("err = %v, want both the named pipe and the symlink", err)
	}
}

func TestWriteDirRefusesVCSMetadataAndConflicts(t *testing.T) {
	tests := []struct {
		name  string
		files []File
		want  error
	}{
		{"git config", []File{{Path: "main.go"}, {Path: ".git/config", Data: []byte("[core]\n\tfsmonitor = touch pwned\n")}}, ErrVCSMetadata},
		{"git hook", []File{{Path: ".git/hooks/pre-commit", Mode: 0o755}}, ErrVCSMetadata},
		{"file and directory", []File{{Path: "pkg"}, {Path: "pkg/a.go"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			must(t, os.Mkdir(filepath.Join(parent, ".git"), 0o755))
			root := filepath.Join(parent, "new", "out")
			err := WriteDir(root, tt.files)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(parent, "new")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a failed write left the directories it created: %v", err)
			}
		})
	}
}

// TestWriteDirUndoesAFailurePartWay fails each rename in turn: whatever
// was already renamed is put back, so the directory is as it was.
func TestWriteDirUndoesAFailurePartWay(t *testing.T) {
	orig := renameInRoot
	t.Cleanup(func() { renameInRoot = orig })
	// Two renames per replaced file (to its backup, then the new one in),
	// one per new file.
	renames := 2*2 + 2
	for failAt := 1; failAt <= renames; failAt++ {
		t.Run(fmt.Sprint(failAt), func(t *testing.T) {
			root := project(t)
			before := testenv.Tree(t, root)
			n := 0
			renameInRoot = func(r *os.Root, from, to string) error {
				if n++; n == failAt {
					return errors.New("injected rename failure")
				}
				return orig(r, from, to)
			}
			err := WriteDir(root, update)
			renameInRoot = orig
			if err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			if diff := testenv.TreeChanges(before, testenv.Tree(t, root)); len(diff) > 0 {
				t.Errorf("the directory changed: %v", diff)
			}
		})
	}
	t.Run("no failure", func(t *testing.T) {
		n := 0
		renameInRoot = func(r *os.Root, from, to string) error { n++; return orig(r, from, to) }
		must(t, WriteDir(project(t), update))
		renameInRoot = orig
		if n != renames {
			t.Errorf("%d renames, the test expects %d", n, renames)
		}
	})
}

func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	must(t, checkSpace(dir, 1))
	if err := checkSpace(dir, 1<<62); !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v, want ErrNoSpace naming %s", err, dir)
	}
}

// TestWriteDirLeavesUnchangedFilesAlone: only files whose content or mode
// differ are written; the others keep their modification time.
func TestWriteDirLeavesUnchangedFilesAlone(t *testing.T) {
	root := t.TempDir()
	in := []File{
		{Path: "calc.py", Data: []byte("def add(a, b):\n    return a - b\n")},
		{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Path: "tests/test_calc.py", Data: []byte("def test_add(): ...\n")},
		{Path: "same-size.txt", Data: []byte("aaaa")},
	}
	n, err := WriteDirChanges(root, in)
	if err != nil || n != len(in) {
		t.Fatalf("first write: %d files, %v", n, err)
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	for _, f := range in {
		must(t, os.Chtimes(filepath.Join(root, f.Path), old, old))
	}
	next := slices.Clone(in)
	next[0].Data = []byte("def add(a, b):\n    return a + b\n") // same size, other content
	next[1].Mode = 0o700                                        // mode only
	n, err = WriteDirChanges(root, next)
	if err != nil || n != 2 {
		t.Fatalf("second write: %d files, %v; want 2 written", n, err)
	}
	for i, f := range next {
		info, err := os.Stat(filepath.Join(root, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		moved := !info.ModTime().Equal(old)
		if want := i < 2; moved != want {
			t.Errorf("%s: modification time moved %v, want %v", f.Path, moved, want)
		}
		if info.Mode().Perm() != fs.FileMode(f.FileMode()) {
			t.Errorf("%s: mode %o, want %o", f.Path, info.Mode().Perm(), f.FileMode())
		}
	}
	if data, _ := os.ReadFile(filepath.Join(root, "calc.py")); !bytes.Equal(data, next[0].Data) {
		t.Errorf("calc.py = %q", data)
	}
}
