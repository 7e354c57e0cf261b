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
		".gitignore":                           "# build output\n*.log\nbuild/\n/secret.txt\ndocs/*.tmp\n!keep.log\n\n",
		"main.go":                              "package main\n",
		"a.txt":                                "sorted after a/",
		"a/b.go":                               "package a\n",
		"app.log":                              "ignored by *.log",
		"sub/deep.log":                         "ignored anywhere",
		"build/out.go":                         "ignored directory",
		"secret.txt":                           "ignored at the root",
		"sub/secret.txt":                       "kept: the pattern is anchored",
		"docs/a.tmp":                           "ignored by docs/*.tmp",
		"docs/b.md":                            "# docs\n",
		".git/config":                          "[core]\n",
		".hg/hgrc":                             "[hooks]\n",
		"vendor/lib/.git":                      "gitdir: ../../.git/modules/lib\n",
		"sub/.GIT/config":                      "[core]\n",
		"web/node_modules/x.js":                "module",
		"blob.dat":                             "abc\x00def",
		"big.txt":                              string(bytes.Repeat([]byte("x"), 101)),
		"exact.txt":                            string(bytes.Repeat([]byte("y"), 100)),
		"run.sh":                               "#!/bin/sh\n",
		`back\slash`:                           "a name CleanPath rejects",
		".autocoder-0123456789abcdef.tmp":      "a temporary of a write cut short",
		"sub/.autocoder-fedcba9876543210.orig": "a backup of a write cut short",
		".autocoder-notes.tmp":                 "kept: not a name WriteDir makes",
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
	want := []string{".autocoder-notes.tmp", ".gitignore", "a.txt", "a/b.go", "docs/b.md", "exact.txt", "main.go", "run.sh", "sub/secret.txt"}
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
		{SkipIgnored, 5}, {SkipExcludedDir, 4}, {SkipCache, 1}, {SkipBinary, 1}, {SkipTooLarge, 1},
		{SkipSymlink, 3}, {SkipUnsafeName, 1}, {SkipSpecial, 0}, {SkipLeftover, 2},
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

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// LoadDir knows every name WriteDir's temporaries and backups can have.
func TestSideNamesAreLeftovers(t *testing.T) {
	for _, suffix := range []string{sideTemp, sideOriginal} {
		if name := filepath.Base(sideName("a/b.go", suffix)); !isSideName(name) {
			t.Errorf("isSideName(%q) = false", name)
		}
	}
	for _, name := range []string{".autocoder-notes.tmp", ".autocoder-0123456789ABCDEF.tmp", ".autocoder-0123456789abcdef.txt", "autocoder-0123456789abcdef.tmp"} {
		if isSideName(name) {
			t.Errorf("isSideName(%q) = true", name)
		}
	}
}
