package workspace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// tree creates files (path → content) under a new temp dir.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, data := range files {
		name := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestLoadDir(t *testing.T) {
	root := tree(t, map[string]string{
		".gitignore":            "# build output\n*.log\nbuild/\n/secret.txt\ndocs/*.tmp\n!keep.log\n\n",
		"main.go":               "package main\n",
		"a.txt":                 "sorted after a/",
		"a/b.go":                "package a\n",
		"app.log":               "ignored by *.log",
		"sub/deep.log":          "ignored anywhere",
		"build/out.go":          "ignored directory",
		"secret.txt":            "ignored at the root",
		"sub/secret.txt":        "kept: the pattern is anchored",
		"docs/a.tmp":            "ignored by docs/*.tmp",
		"docs/b.md":             "# docs\n",
		".git/config":           "[core]\n",
		"web/node_modules/x.js": "module",
		"blob.dat":              "abc\x00def",
		"big.txt":               string(bytes.Repeat([]byte("x"), 101)),
		"exact.txt":             string(bytes.Repeat([]byte("y"), 100)),
		"run.sh":                "#!/bin/sh\n",
		`back\slash`:            "a name CleanPath rejects",
	})
	must(t, os.Chmod(filepath.Join(root, "run.sh"), 0o755))
	must(t, os.Symlink("main.go", filepath.Join(root, "link.go")))
	must(t, os.Symlink("/etc", filepath.Join(root, "etc")))
	must(t, os.Symlink("docs", filepath.Join(root, "docs2")))

	files, sum, err := LoadDir(root, LoadOptions{Limits: Limits{MaxFileBytes: 100, MaxFiles: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	want := []string{".gitignore", "a.txt", "a/b.go", "docs/b.md", "exact.txt", "main.go", "run.sh", "sub/secret.txt"}
	if !slices.Equal(paths, want) {
		t.Fatalf("loaded %q\nwant   %q", paths, want)
	}
	if f := files[slices.Index(paths, "run.sh")]; f.Mode != 0o755 || string(f.Data) != "#!/bin/sh\n" {
		t.Errorf("run.sh = mode %o %q", f.Mode, f.Data)
	}
	if sum.Files != len(want) {
		t.Errorf("summary counts %d files, want %d", sum.Files, len(want))
	}
	counts := []struct {
		reason SkipReason
		want   int
	}{
		{SkipIgnored, 5}, {SkipExcludedDir, 2}, {SkipBinary, 1}, {SkipTooLarge, 1},
		{SkipSymlink, 3}, {SkipUnsafeName, 1}, {SkipSpecial, 0},
	}
	for _, c := range counts {
		if got := sum.Count(c.reason); got != c.want {
			t.Errorf("skipped %d as %q, want %d (%v)", got, c.reason, c.want, sum.Skipped)
		}
	}
}

func TestLoadDirLimits(t *testing.T) {
	root := tree(t, map[string]string{"a": "12345", "b": "12345", "c": "12345"})
	tests := []struct {
		name   string
		limits Limits
		ok     bool
	}{
		{"within", Limits{MaxFiles: 3, MaxTotalBytes: 15}, true},
		{"too many files", Limits{MaxFiles: 2}, false},
		{"too many bytes", Limits{MaxTotalBytes: 14}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadDir(root, LoadOptions{Limits: tt.limits})
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, ErrLimit)) {
				t.Fatalf("err = %v, want ok=%v or ErrLimit", err, tt.ok)
			}
		})
	}
}

func TestWriteDirRoundtrip(t *testing.T) {
	root := filepath.Join(t.TempDir(), "out")
	in := []File{
		{Path: "cmd/tool/main.go", Data: []byte("package main\n")},
		{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
		{Path: "private", Mode: 0o600, Data: []byte("s")},
		{Path: "empty"},
	}
	must(t, WriteDir(root, in))
	must(t, WriteDir(root, in)) // overwriting is fine
	got, _, err := LoadDir(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(in)
	Sort(want)
	if len(got) != len(want) {
		t.Fatalf("read back %d files, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Mode != want[i].FileMode() || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("file %d = %s %o %q, want %s %o %q", i, got[i].Path, got[i].Mode, got[i].Data,
				want[i].Path, want[i].FileMode(), want[i].Data)
		}
	}
}

func TestWriteDirRefuses(t *testing.T) {
	outside := t.TempDir()
	tests := []struct {
		name  string
		setup func(root string)
		path  string
		want  error
	}{
		{"symlinked parent", func(root string) { must(t, os.Symlink(outside, filepath.Join(root, "out"))) }, "out/x", ErrSymlink},
		{"symlinked parent inside root", func(root string) {
			must(t, os.Mkdir(filepath.Join(root, "real"), 0o755))
			must(t, os.Symlink("real", filepath.Join(root, "alias")))
		}, "alias/x", ErrSymlink},
		{"symlink at the file", func(root string) {
			must(t, os.Symlink(filepath.Join(outside, "x"), filepath.Join(root, "x")))
		}, "x", ErrSymlink},
		{"dot dot", func(string) {}, "../x", ErrUnsafePath},
		{"absolute", func(string) {}, "/tmp/x", ErrUnsafePath},
		{"not canonical", func(string) {}, "a//x", ErrUnsafePath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			tt.setup(root)
			err := WriteDir(root, []File{{Path: tt.path, Data: []byte("pwned")}})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("wrote outside the root: %v", entries)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
