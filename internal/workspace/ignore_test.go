package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
)

// ignoreTree exercises gitignore(5): nested files overriding the root,
// negation, anchoring, directory-only patterns, "**" in each place,
// bracket expressions, escapes, trailing spaces and info/exclude.
var ignoreTree = map[string]string{
	".gitignore": "# comment\n*.log\n!important.log\n/root-only.txt\nbuild/\ndocs/**/*.tmp\n**/gen/out.txt\nlogs/**\n" +
		"file[0-9].txt\n\\#hash.txt\ntrailing.txt   \n*.o\n!keep/*.o\ndata/*\n!data/keep.csv\nnot-a-dir/\n" +
		"x/**/y.md\n[!a-c]*.cfg\n\\!bang.txt\nspace\\ .txt\n",
	".git/info/exclude":      "excluded-by-info.txt\n",
	"important.log":          "kept by negation",
	"app.log":                "ignored",
	"src/deep/app.log":       "ignored at any depth",
	"root-only.txt":          "ignored: anchored",
	"src/root-only.txt":      "kept: the pattern is anchored to the root",
	"build/x.txt":            "ignored directory",
	"src/build/y.txt":        "ignored directory at any depth",
	"docs/a.tmp":             "ignored: ** matches no directory",
	"docs/x/y/b.tmp":         "ignored: ** matches several",
	"docs/c.md":              "kept",
	"gen/out.txt":            "ignored by **/gen",
	"a/b/gen/out.txt":        "ignored by **/gen deeper",
	"logs/today.txt":         "ignored by logs/**",
	"file1.txt":              "ignored by a class",
	"filex.txt":              "kept",
	"#hash.txt":              "ignored: escaped #",
	"trailing.txt":           "ignored: trailing spaces trimmed",
	"main.o":                 "ignored",
	"keep/lib.o":             "kept by negation",
	"data/a.csv":             "ignored",
	"data/keep.csv":          "kept by negation",
	"not-a-dir":              "kept: the pattern is for directories",
	"excluded-by-info.txt":   "ignored by info/exclude",
	"sub/.gitignore":         "!app.log\n*.txt\n/only-here.md\n",
	"sub/app.log":            "kept: the nested file re-includes it",
	"sub/notes.txt":          "ignored by the nested file",
	"sub/only-here.md":       "ignored: anchored to sub/",
	"sub/inner/only-here.md": "kept",
	"sub/inner/x.txt":        "ignored: the nested pattern has no slash",
	"main.py":                "kept",
	"x/y.md":                 "ignored: /**/ matches no directory",
	"x/p/q/y.md":             "ignored: /**/ matches several",
	"x/z.md":                 "kept",
	"a.cfg":                  "kept: in the class",
	"d.cfg":                  "ignored: not in the class",
	"!bang.txt":              "ignored: escaped !",
	"space .txt":             "ignored: escaped space",
	"sub/deeper/.gitignore":  "/**\n",
	"sub/deeper/any/x.md":    "ignored by /** in a nested file",
}

// TestIgnoreRulesAsGit: LoadDir leaves out what git leaves out, asked of
// git itself (ls-files --others --exclude-standard, with no configuration
// of the machine's) over the same tree.
func TestIgnoreRulesAsGit(t *testing.T) {
	root := tree(t, ignoreTree)
	_, err := exec.LookPath("git")
	testenv.RequireService(t, "git", err)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES=" + filepath.Dir(root)}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	// init keeps the existing .git/info/exclude; ls-files needs the rest.
	git("init", "-q")
	must(t, os.WriteFile(filepath.Join(root, ".git/info/exclude"), []byte(ignoreTree[".git/info/exclude"]), 0o644))
	want := strings.Split(strings.TrimSuffix(git("ls-files", "--others", "--exclude-standard", "-z"), "\x00"), "\x00")
	slices.Sort(want)
	if len(want) < 10 {
		t.Fatalf("git keeps only %q", want)
	}

	files, _, err := LoadDir(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if !slices.Equal(got, want) {
		t.Errorf("LoadDir kept\n%q\ngit keeps\n%q", got, want)
	}
	for _, p := range []string{"important.log", "src/root-only.txt", "keep/lib.o", "data/keep.csv", "sub/app.log", "sub/inner/only-here.md", "not-a-dir"} {
		if !slices.Contains(got, p) {
			t.Errorf("%s is not uploaded", p)
		}
	}
}

// TestCachesNeverUploaded: caches and build output of known toolchains
// stay out whatever the .gitignore says, and sources named like output
// directories stay in.
func TestCachesNeverUploaded(t *testing.T) {
	root := tree(t, map[string]string{
		".gitignore":                    "!*\n",
		"calc.py":                       "def add(a, b): return a + b\n",
		"__pycache__/calc.txt":          "x",
		"tests/__pycache__/t.txt":       "x",
		".pytest_cache/v/cache/nodeids": "[]",
		".mypy_cache/3.11/x.json":       "{}",
		".ruff_cache/0.1/x":             "x",
		".tox/py311/x":                  "x",
		".venv/pyvenv.cfg":              "home = /usr/bin\n",
		".venv/lib/site.py":             "x",
		"env2/pyvenv.cfg":               "home = /usr/bin\n",
		"web/node_modules/x/index.js":   "x",
		"rust/Cargo.toml":               "[package]\n",
		"rust/src/main.rs":              "fn main() {}\n",
		"rust/target/debug/out.d":       "x",
		"tagged/CACHEDIR.TAG":           cacheDirTag + "\n",
		"tagged/x":                      "x",
		"java/build.gradle":             "",
		"java/build/classes/A.txt":      "x",
		"java/.gradle/8.0/x":            "x",
		"target/notes.md":               "kept: no Cargo.toml beside it",
		"build/script.py":               "kept: sources in a build/ of a project without a build tool's output",
		"dist/index.js":                 "kept",
		"tagged-wrong/CACHEDIR.TAG":     "not a tag\n",
	})
	files, sum, err := LoadDir(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	want := []string{".gitignore", "build/script.py", "calc.py", "dist/index.js", "java/build.gradle", "rust/Cargo.toml", "rust/src/main.rs", "tagged-wrong/CACHEDIR.TAG", "target/notes.md"}
	if !slices.Equal(got, want) {
		t.Errorf("uploaded %q\nwant     %q", got, want)
	}
	if n := sum.Count(SkipCache); n != 13 {
		t.Errorf("%d skipped as caches, want 13: %v", n, sum.Skipped)
	}
}

// TestSymlinkedIgnoreFileNotFollowed: as in git, a .gitignore that is a
// symlink is not read; nor is an info/exclude under a symlinked .git.
func TestSymlinkedIgnoreFileNotFollowed(t *testing.T) {
	outside := tree(t, map[string]string{"all": "*\n", "git/info/exclude": "*\n"})
	root := tree(t, map[string]string{"sub/a.py": "x", "b.py": "x"})
	must(t, os.Symlink(filepath.Join(outside, "all"), filepath.Join(root, "sub/.gitignore")))
	must(t, os.Symlink(filepath.Join(outside, "git"), filepath.Join(root, ".git")))
	files, _, err := LoadDir(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if want := []string{"b.py", "sub/a.py"}; !slices.Equal(got, want) {
		t.Errorf("uploaded %q, want %q", got, want)
	}
}
