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

func TestCleanPathRefusesNamesThatCannotBeWritten(t *testing.T) {
	deep := strings.Repeat(strings.Repeat("d", 99)+"/", 60) + "f.py" // 6004 bytes, each part short
	refused := map[string]string{
		"256-byte name":            strings.Repeat("n", 256) + ".py",
		"256-byte directory":       strings.Repeat("n", 256) + "/a.py",
		"6000-byte path":           deep,
		"newline":                  "a\nb.py",
		"carriage return":          "a\rb.py",
		"tab":                      "a\tb.py",
		"escape sequence":          "\x1b[31mred.py",
		"C1 control (CSI)":         "a\u009b2Jb.py",
		"DEL":                      "a\x7fb.py",
		"bytes that are not UTF-8": "caf\xe9.py",
	}
	for what, p := range refused {
		_, err := CleanPath(p)
		if !errors.Is(err, ErrUnwritableName) || !errors.Is(err, ErrUnsafePath) {
			t.Errorf("%s: CleanPath = %v, want ErrUnwritableName and ErrUnsafePath", what, err)
			continue
		}
		if len(err.Error()) > 400 {
			t.Errorf("%s: the error is %d bytes; it quotes too much of the path", what, len(err.Error()))
		}
	}
	allowed := []string{
		strings.Repeat("n", 255),
		strings.Repeat(strings.Repeat("d", 99)+"/", 39) + "f.py", // 3904 bytes
		"café/naïve 日本語.py", "a b/c-d_e.f", "emoji-🙂.txt",
	}
	for _, p := range allowed {
		if c, err := CleanPath(p); err != nil || c != p {
			t.Errorf("CleanPath(%.40q…) = %v; want it unchanged", p, err)
		}
	}
}
