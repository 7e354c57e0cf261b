package workspace

import (
	"errors"
	"path"
	"strings"
	"testing"
)

func TestCleanPathRefusesVCSMetadata(t *testing.T) {
	refused := []string{
		".git/config", ".git/hooks/pre-commit", ".git", "sub/.git/config", "a/b/.git",
		".GIT/config", ".Git/hooks/post-checkout",
		".git./config", ".git /config", ".git. . /config", // Windows drops trailing dots and spaces
		"git~1/config", "GIT~2/config", // 8.3 short names
		".git::$INDEX_ALLOCATION/config", ".git:stream", // NTFS streams
		".g\u200cit/config", "\ufeff.git/config", // code points HFS+ ignores
		".hg/hgrc", ".HG/hgrc", ".svn/entries", ".bzr/branch.conf", "_darcs/prefs/defaults", ".jj/repo/config.toml",
		"hg~1/hgrc",
	}
	for _, p := range refused {
		_, err := CleanPath(p)
		if !errors.Is(err, ErrVCSMetadata) || !errors.Is(err, ErrUnsafePath) {
			t.Errorf("CleanPath(%q) = %v, want ErrVCSMetadata and ErrUnsafePath", p, err)
		}
	}
	allowed := []string{
		".gitignore", ".gitattributes", ".gitmodules", ".github/workflows/ci.yml", ".hgignore",
		"git/config", "docs/.git-notes", "gitx~1/a", "git~/a", "git~1a/b", "my.git/x", "svn/x",
	}
	for _, p := range allowed {
		if c, err := CleanPath(p); err != nil || c != p {
			t.Errorf("CleanPath(%q) = %q, %v; want it unchanged", p, c, err)
		}
	}
}

func TestCheckRefusesABareRepositoryShape(t *testing.T) {
	files := func(paths ...string) []File {
		var fs []File
		for _, p := range paths {
			f := File{Path: p}
			if strings.EqualFold(path.Base(p), "head") {
				f.Data = []byte("ref: refs/heads/main\n")
			}
			fs = append(fs, f)
		}
		Sort(fs)
		return fs
	}
	refused := [][]File{
		files("HEAD", "config", "objects/info/packs", "refs/heads/main"),
		files("vendor/x/HEAD", "vendor/x/config", "vendor/x/objects/ab/cdef", "vendor/x/refs/tags/v1", "main.go"),
		files("Sub/head", "Sub/Objects/x", "sub/REFS/x"), // one directory where case does not count
	}
	for _, fs := range refused {
		if err := (Limits{}).Check(fs); !errors.Is(err, ErrVCSMetadata) {
			t.Errorf("Check(%v) = %v, want ErrVCSMetadata", fs, err)
		}
	}
	allowed := [][]File{
		files("HEAD", "objects/a.go"),                     // no refs/
		files("a/HEAD", "b/objects/x", "a/refs/x"),        // objects/ elsewhere
		files("docs/HEAD.md", "objects/x", "refs/x"),      // not HEAD
		files("HEAD/x", "objects/x", "refs/x", "main.go"), // HEAD is a directory
	}
	for _, fs := range allowed {
		if err := (Limits{}).Check(fs); err != nil {
			t.Errorf("Check(%v) = %v, want nil", fs, err)
		}
	}
}
