package workspace

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
)

// gitShape is one way to fill a directory r (and its sibling c) with the
// entries git's discovery reads.
type gitShape struct {
	name  string
	files []File
}

// gitShapes crosses HEAD contents, the file types and modes of objects and
// refs, and commondir indirections.
func gitShapes() []gitShape {
	heads := []struct {
		name string
		file *File
	}{
		{"no HEAD", nil},
		{"symbolic", &File{Path: "r/HEAD", Data: []byte("ref: refs/heads/main\n")}},
		{"symbolic, no space", &File{Path: "r/HEAD", Data: []byte("ref:refs/heads/x")}},
		{"symbolic, tab", &File{Path: "r/HEAD", Data: []byte("ref:\t refs/x\n")}},
		{"detached", &File{Path: "r/HEAD", Data: []byte(strings.Repeat("ab12", 10) + "\n")}},
		{"detached, upper case", &File{Path: "r/HEAD", Data: []byte(strings.Repeat("AB12", 10))}},
		{"detached, trailing junk", &File{Path: "r/HEAD", Data: []byte(strings.Repeat("0", 40) + " junk")}},
		{"short hex", &File{Path: "r/HEAD", Data: []byte(strings.Repeat("a", 39))}},
		{"not under refs/", &File{Path: "r/HEAD", Data: []byte("ref: heads/main\n")}},
		{"prose", &File{Path: "r/HEAD", Data: []byte("# The head of the list\n")}},
		{"empty", &File{Path: "r/HEAD"}},
		{"a directory", &File{Path: "r/HEAD/x", Data: []byte("ref: refs/heads/main\n")}},
	}
	entries := func(name string) []struct {
		name  string
		files []File
	} {
		return []struct {
			name  string
			files []File
		}{
			{"absent", nil},
			{"a directory", []File{{Path: name + "/x", Data: []byte("x")}}},
			{"an executable file", []File{{Path: name, Mode: 0o755, Data: []byte("x")}}},
			{"a file executable by its owner", []File{{Path: name, Mode: 0o700}}},
			{"a plain file", []File{{Path: name, Mode: 0o644, Data: []byte("x")}}},
		}
	}
	commons := []struct {
		name  string
		dir   string // where objects and refs go
		files []File
	}{
		{"no commondir", "r", nil},
		{"commondir to a sibling", "c", []File{{Path: "r/commondir", Data: []byte("../c\n")}}},
		{"commondir to itself", "r", []File{{Path: "r/commondir", Data: []byte(".\r\n")}}},
		{"commondir to a sibling, objects here", "r", []File{{Path: "r/commondir", Data: []byte("../c")}}},
	}
	var shapes []gitShape
	for _, h := range heads {
		for _, o := range entries("objects") {
			for _, rf := range entries("refs") {
				for _, c := range commons {
					if c.files != nil && (o.name != "a directory" && o.name != "an executable file" || rf.name != o.name) {
						continue // commondir crossed with the shapes that make a repository only
					}
					s := gitShape{name: fmt.Sprintf("HEAD %s, objects %s, refs %s, %s", h.name, o.name, rf.name, c.name)}
					if h.file != nil {
						s.files = append(s.files, *h.file)
					}
					for _, f := range append(append([]File{}, o.files...), rf.files...) {
						f.Path = c.dir + "/" + f.Path
						s.files = append(s.files, f)
					}
					s.files = append(s.files, c.files...)
					s.files = append(s.files, File{Path: "c/keep", Data: []byte("x")}, File{Path: "r/keep", Data: []byte("x")})
					shapes = append(shapes, s)
				}
			}
		}
	}
	return shapes
}

// gitTakesForGitDir asks git itself whether it takes dir for a git
// directory, looking no higher than dir's parent and reading no config of
// the machine's.
func gitTakesForGitDir(t *testing.T, dir string) bool {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "--git-dir")
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(dir),
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return strings.TrimSpace(string(out)) == "."
	case errors.As(err, &exit) && strings.Contains(string(out), "not a git repository"):
		return false
	}
	t.Fatalf("git rev-parse in %s: %v\n%s", dir, err, out)
	return false
}

// writeRaw puts files on disk as they are, bypassing every check.
func writeRaw(t *testing.T, root string, files []File) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, os.FileMode(f.FileMode())); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, os.FileMode(f.FileMode())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGitDirectoryRuleAgreesWithGit: for every shape in the table, the
// check refuses the file set exactly when `git rev-parse --git-dir` run in
// the directory takes it for a repository; so does WriteDir, whether the
// shape is written whole or completed over entries already on disk.
func TestGitDirectoryRuleAgreesWithGit(t *testing.T) {
	_, err := exec.LookPath("git")
	testenv.RequireService(t, "git", err)
	shapes := gitShapes()
	repos := 0
	for i, s := range shapes {
		Sort(s.files)
		onDisk := filepath.Join(t.TempDir(), fmt.Sprint(i))
		writeRaw(t, onDisk, s.files)
		want := gitTakesForGitDir(t, filepath.Join(onDisk, "r"))
		if want {
			repos++
		}

		err = (Limits{}).Check(s.files)
		if got := errors.Is(err, ErrVCSMetadata); got != want {
			t.Errorf("%s: git takes r for a repository: %v; Check: %v", s.name, want, err)
		}

		whole := t.TempDir()
		err = WriteDir(whole, s.files)
		if got := errors.Is(err, ErrVCSMetadata); got != want {
			t.Errorf("%s: git: %v; WriteDir of the whole shape: %v", s.name, want, err)
		}

		// The last file written over the others already on disk.
		last := len(s.files) - 1
		for j, f := range s.files {
			if !strings.HasSuffix(f.Path, "/keep") {
				last = j
			}
		}
		over := t.TempDir()
		writeRaw(t, over, append(append([]File{}, s.files[:last]...), s.files[last+1:]...))
		err = WriteDir(over, s.files[last:last+1])
		if got := errors.Is(err, ErrVCSMetadata); got != want {
			t.Errorf("%s: git: %v; WriteDir of %s over the rest: %v", s.name, want, s.files[last].Path, err)
		}
	}
	t.Logf("%d shapes, %d of them repositories to git", len(shapes), repos)
	if repos == 0 || repos == len(shapes) {
		t.Fatalf("the table does not discriminate: %d repositories of %d shapes", repos, len(shapes))
	}
}

// TestGitDirectoryRuleIgnoresCase: a file system that folds case would
// give git "Head", "OBJECTS" and "Refs" as HEAD, objects and refs, so the
// check refuses them too, wherever they are, the root included.
func TestGitDirectoryRuleIgnoresCase(t *testing.T) {
	head := []byte("ref: refs/heads/main\n")
	refused := [][]File{
		{{Path: "Head", Data: head}, {Path: "OBJECTS/x"}, {Path: "Refs/x"}},
		{{Path: "a/b/HEAD", Data: head}, {Path: "a/b/objects", Mode: 0o755}, {Path: "a/b/refs/heads/main"}},
		{{Path: "HEAD", Data: head}, {Path: "objects/x"}, {Path: "refs/x"}, {Path: "main.go"}},
		{{Path: "w/HEAD", Data: head}, {Path: "w/commondir", Data: []byte("/home/user/project/.git\n")}},
		{{Path: "w/HEAD", Data: head}, {Path: "w/commondir", Data: []byte("../../outside")}},
	}
	for _, fs := range refused {
		Sort(fs)
		if err := (Limits{}).Check(fs); !errors.Is(err, ErrVCSMetadata) {
			t.Errorf("Check(%v) = %v, want ErrVCSMetadata", fs, err)
		}
		if err := WriteDir(t.TempDir(), fs); !errors.Is(err, ErrVCSMetadata) {
			t.Errorf("WriteDir(%v) = %v, want ErrVCSMetadata", fs, err)
		}
	}
}

// TestWriteDirSeesGitEntriesLoadDirLeftOut: objects and refs that the
// project keeps out of its workspace (ignored, or a symlink) still make a
// repository of a directory where the task writes HEAD.
func TestWriteDirSeesGitEntriesLoadDirLeftOut(t *testing.T) {
	dir := t.TempDir()
	writeRaw(t, dir, []File{{Path: "build/objects/x"}})
	if err := os.Symlink("/", filepath.Join(dir, "build", "refs")); err != nil {
		t.Fatal(err)
	}
	err := WriteDir(dir, []File{{Path: "build/HEAD", Data: []byte("ref: refs/heads/main\n")}})
	if !errors.Is(err, ErrVCSMetadata) {
		t.Fatalf("WriteDir = %v, want ErrVCSMetadata", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "build", "HEAD")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("HEAD was written: %v", err)
	}
}
