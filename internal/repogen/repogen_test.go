package repogen

import (
	"bytes"
	"errors"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
)

func TestGenerateShape(t *testing.T) {
	r := Generate(Options{Seed: 1})
	if len(r.Files) < 300 || r.Size() < 2<<20 {
		t.Errorf("%d files of %d bytes; want at least 300 files and 2 MiB", len(r.Files), r.Size())
	}
	if err := workspace.DefaultLimits.Check(r.Files); err != nil {
		t.Fatalf("the workspace rejects the repository: %v", err)
	}
	if !slices.IsSortedFunc(r.Files, func(a, b workspace.File) int { return strings.Compare(a.Path, b.Path) }) {
		t.Error("files are not in workspace order")
	}
	if strings.Count(r.Bug.Path, "/") < 5 {
		t.Errorf("bug in %s, not deep in the tree", r.Bug.Path)
	}
	var bugFile []byte
	for _, f := range r.Files {
		if f.Path == r.Bug.Path {
			bugFile = f.Data
		}
	}
	if n := bytes.Count(bugFile, []byte(r.Bug.Buggy)); n != 1 {
		t.Fatalf("the buggy text occurs %d times in %s", n, r.Bug.Path)
	}
	if line := strings.Split(string(bugFile), "\n")[r.Bug.Line-1]; !strings.Contains(line, r.Bug.Buggy) {
		t.Errorf("line %d of %s is %q, not the bug", r.Bug.Line, r.Bug.Path, line)
	}
	// A prompt that quotes tests first, then the smallest files, must not
	// reach the bug before anything else: it is the largest module.
	for _, f := range r.Files {
		if f.Path != r.Bug.Path && strings.HasSuffix(f.Path, ".py") && len(f.Data) >= len(bugFile) {
			t.Errorf("%s (%d bytes) is not smaller than the bug's module (%d bytes)", f.Path, len(f.Data), len(bugFile))
		}
	}
	fixed := r.Fix()
	if slices.EqualFunc(fixed, r.Files, func(a, b workspace.File) bool { return bytes.Equal(a.Data, b.Data) }) {
		t.Error("Fix changed nothing")
	}
	if !bytes.Contains(r.Files[slices.IndexFunc(r.Files, func(f workspace.File) bool { return f.Path == r.Bug.Path })].Data, []byte(r.Bug.Buggy)) {
		t.Error("Fix modified the repository it was called on")
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, b, c := Generate(Options{Seed: 7}), Generate(Options{Seed: 7}), Generate(Options{Seed: 8})
	same := func(x, y []workspace.File) bool {
		return slices.EqualFunc(x, y, func(p, q workspace.File) bool { return p.Path == q.Path && bytes.Equal(p.Data, q.Data) })
	}
	if !same(a.Files, b.Files) || a.Bug != b.Bug {
		t.Error("the same seed gave different repositories")
	}
	if same(a.Files, c.Files) {
		t.Error("different seeds gave the same repository")
	}
}

// TestGeneratedCodeRuns runs the generated suite for real: exactly the
// planted bug's test fails, and the fix makes the whole suite pass. The Go
// module builds.
func TestGeneratedCodeRuns(t *testing.T) {
	python := "/usr/bin/python3"
	err := exec.Command(python, "-c", "import pytest").Run()
	testenv.RequireService(t, "python3 with pytest", err)
	r := Generate(Options{Seed: 3})
	dir := t.TempDir()
	if err := workspace.WriteDir(dir, r.Files); err != nil {
		t.Fatal(err)
	}
	pytest := func() (string, error) {
		cmd := exec.Command(python, "-m", "pytest", "-q", "-p", "no:cacheprovider")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := pytest()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(out, "1 failed") || !strings.Contains(out, r.Bug.Test+"::test_apply_discount") {
		t.Fatalf("before the fix, want exactly the bug's test to fail; got %v:\n%s", err, tail(out))
	}
	if err := workspace.WriteDir(dir, r.Fix()); err != nil {
		t.Fatal(err)
	}
	if out, err := pytest(); err != nil || strings.Contains(out, "failed") {
		t.Fatalf("after the fix: %v\n%s", err, tail(out))
	}

	for _, f := range r.Files {
		if strings.HasSuffix(f.Path, ".go") {
			if src, err := format.Source(f.Data); err != nil || !bytes.Equal(src, f.Data) {
				t.Errorf("%s is not gofmt'd Go: %v", f.Path, err)
			}
		}
	}
	build := exec.Command("go", "vet", "./...")
	build.Dir = filepath.Join(dir, "tools")
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Errorf("go vet of the generated module: %v\n%s", err, out)
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}
