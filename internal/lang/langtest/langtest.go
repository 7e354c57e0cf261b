// Package langtest holds what the language plug-ins' tests share: the
// repository's examples read as a task's files, with a fix applied at test
// time; recorded outputs under testdata; sandbox runners and runs whose
// missing backend or toolchain fails in CI (testenv.RequireService); and
// the checks of a Finding, of the failing tests' names, of a digest and of
// detection that every plug-in makes the same way.
//
// It never imports internal/lang/languages: the plug-ins' own in-package
// tests import it, and languages imports the plug-ins.
package langtest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// Fix is a small edit of one file of an example: Old, found in the file
// at Path, becomes New. A test holds the edit rather than a whole fixed
// copy, so the example can change around it; an edit that no longer
// applies fails the test.
type Fix struct {
	Path     string
	Old, New string
}

// Example reads examples/<name> of the repository as a task's files, with
// fixes applied.
func Example(t testing.TB, name string, fixes ...Fix) []workspace.File {
	t.Helper()
	return Apply(t, Project(t, filepath.Join(testenv.RepoRoot(t), "examples", name)), fixes...)
}

// Project reads every file under dir as a task's files, their paths
// relative to dir.
func Project(t testing.TB, dir string) []workspace.File {
	t.Helper()
	var files []workspace.File
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, workspace.File{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatalf("read project %s: %v", dir, err)
	}
	return files
}

// Apply is files with each fix made, once; a fix whose file is missing or
// does not hold its Old text fails the test.
func Apply(t testing.TB, files []workspace.File, fixes ...Fix) []workspace.File {
	t.Helper()
	out := slices.Clone(files)
	for _, fix := range fixes {
		i := slices.IndexFunc(out, func(f workspace.File) bool { return f.Path == fix.Path })
		if i < 0 {
			t.Fatalf("fix: no file %s", fix.Path)
		}
		if !bytes.Contains(out[i].Data, []byte(fix.Old)) {
			t.Fatalf("fix: %s no longer holds %q", fix.Path, fix.Old)
		}
		out[i].Data = bytes.Replace(out[i].Data, []byte(fix.Old), []byte(fix.New), 1)
	}
	return out
}

// WithFile is files with f in place of the file of its path, or added.
func WithFile(files []workspace.File, f workspace.File) []workspace.File {
	out := slices.DeleteFunc(slices.Clone(files), func(g workspace.File) bool { return g.Path == f.Path })
	return append(out, f)
}

// Output reads testdata/<name>: a recorded output of a real run.
func Output(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Runner is a sandbox runner of backend serving ls, without a warm pool,
// closed when the test ends. A backend that cannot start fails in CI and
// skips the test elsewhere.
func Runner(t testing.TB, backend string, ls ...lang.Language) sandbox.Runner {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := sandbox.New(ctx, sandbox.Config{Backend: backend, PoolSize: -1, Profiles: sandbox.ProfilesOf(ls)})
	if err != nil {
		testenv.RequireService(t, backend+" backend", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// runTimeout bounds one run from outside, above any run's own limit, so
// that a run the sandbox times out is read as its result.
const runTimeout = 5 * time.Minute

// Run runs spec in r and returns its result and its output as the check
// reads it: stderr after stdout. A missing image or host toolchain fails
// in CI and skips the test elsewhere; a run the sandbox killed (timeout,
// memory) fails the test, as no test here wants one.
func Run(t testing.TB, r sandbox.Runner, spec sandbox.Spec) (sandbox.Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	res, err := r.Run(ctx, spec)
	if errors.Is(err, sandbox.ErrImageMissing) || errors.Is(err, sandbox.ErrUnavailable) {
		testenv.RequireService(t, "the "+spec.Profile+" toolchain on "+r.Name(), err)
	}
	if err != nil {
		t.Fatalf("run %q: %v", spec.Cmd, err)
	}
	out := res.Stdout
	if res.Stderr != "" {
		out += "\n" + res.Stderr
	}
	if res.TimedOut || res.OOMKilled {
		t.Fatalf("run %q killed (timed out %v, out of memory %v):\n%s", spec.Cmd, res.TimedOut, res.OOMKilled, out)
	}
	return res, out
}

// Failing are the distinct test names patterns find in out, in the order
// the check reports them: pattern by pattern, match by match. An empty
// first group names no test (Jest's "Test suite failed to run" is a file).
func Failing(patterns []*regexp.Regexp, out string) []string {
	var names []string
	for _, re := range patterns {
		for _, m := range re.FindAllStringSubmatch(out, -1) {
			if m[1] != "" && !slices.Contains(names, m[1]) {
				names = append(names, m[1])
			}
		}
	}
	return names
}

// CheckFinding fails t unless got has want's Kind and Shape and its Keys
// start with want's.
func CheckFinding(t testing.TB, got, want lang.Finding) {
	t.Helper()
	if got.Kind != want.Kind || got.Shape != want.Shape {
		t.Errorf("finding = %q, %q; want %q, %q", got.Kind, got.Shape, want.Kind, want.Shape)
	}
	if len(got.Keys) < len(want.Keys) || !slices.Equal(got.Keys[:len(want.Keys)], want.Keys) {
		t.Errorf("keys = %q; want them to start with %q", got.Keys, want.Keys)
	}
}

// DigestCase is a recorded output and what its digest keeps and drops.
type DigestCase struct {
	File string   // under testdata
	Want []string // each in the digest
	Not  []string // none in the digest
}

// CheckDigests runs digest over each case's output, a subtest each. A
// digest over limit bytes fails; limit 0 sets no bound.
func CheckDigests(t *testing.T, digest func(string) string, limit int, cases []DigestCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			d := digest(Output(t, c.File))
			if limit > 0 && len(d) > limit {
				t.Errorf("digest of %d bytes, over %d", len(d), limit)
			}
			for _, w := range c.Want {
				if !strings.Contains(d, w) {
					t.Errorf("digest lacks %q:\n%s", w, d)
				}
			}
			for _, n := range c.Not {
				if strings.Contains(d, n) {
					t.Errorf("digest keeps %q:\n%s", n, d)
				}
			}
		})
	}
}

// DetectCase is a project's root files, its test command and a task, and
// the language they are detected as.
type DetectCase struct {
	Name          string
	Root          []string
	TestCmd, Task string
	Want          string
}

// Check fails t unless got, the name detected for the case (for the
// reason given), is the one the case wants.
func (c DetectCase) Check(t testing.TB, got, reason string) {
	t.Helper()
	if got != c.Want {
		t.Errorf("%s: Detect(%q, %q, %q) = %s (%s); want %s", c.Name, c.Root, c.TestCmd, c.Task, got, reason, c.Want)
	}
}

// CheckIsTestFile fails t for each path isTest does not class as want
// says (true: a test file).
func CheckIsTestFile(t testing.TB, isTest func(path string) bool, want map[string]bool) {
	t.Helper()
	for p, w := range want {
		if got := isTest(p); got != w {
			t.Errorf("IsTestFile(%q) = %v, want %v", p, got, w)
		}
	}
}

// ParseCase is a recorded output and the Finding read from it; Keys are
// the first keys, in order.
type ParseCase struct {
	File        string // under testdata
	Kind, Shape string
	Keys        []string
}

// CheckParses runs parse over each case's output lines, a subtest each.
func CheckParses(t *testing.T, parse func(lines []string) lang.Finding, cases []ParseCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			got := parse(strings.Split(Output(t, c.File), "\n"))
			CheckFinding(t, got, lang.Finding{Kind: c.Kind, Shape: c.Shape, Keys: c.Keys})
		})
	}
}
