// Package integrity guards the user's tests, the only judge a task has: it
// fixes the set of protected files at a task's start, compares each
// attempt with them, and gives the judge the originals to run.
package integrity

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Options say what, beyond the conventions, belongs to the user's tests.
type Options struct {
	// TestCmd is the user's test command; the files and directories it
	// names are protected.
	TestCmd string
	// Protect are extra globs (path.Match syntax against the slash path,
	// or the base name when the glob has no slash; "dir/**" is a prefix).
	Protect []string
}

// Set is the protected set fixed at a task's start: the user's test files
// and test configuration, as they were.
type Set struct {
	input     map[string]workspace.File // the whole starting workspace
	protected []string                  // sorted
	tests     []string                  // the protected files that are tests, not configuration
}

// Protect fixes the protected set of a starting workspace.
func Protect(input []workspace.File, o Options) Set {
	s := Set{input: make(map[string]workspace.File, len(input))}
	named := namedByCommand(o.TestCmd)
	for _, f := range input {
		s.input[f.Path] = f
		test := IsTestFile(f.Path) || named(f.Path) || matchesAny(o.Protect, f.Path)
		if test || isTestConfig(f.Path, f.Data) {
			s.protected = append(s.protected, f.Path)
		}
		if test {
			s.tests = append(s.tests, f.Path)
		}
	}
	slices.Sort(s.protected)
	return s
}

// HasTests reports whether the workspace has tests of the user's that the
// language's runner would run (isSource: its test sources): files named
// like tests, named by the test command or by Protect. Test configuration
// alone is not a test, nor are another language's tests.
func (s Set) HasTests(isSource func(path string) bool) bool {
	return slices.ContainsFunc(s.tests, isSource)
}

// Paths are the protected files, sorted.
func (s Set) Paths() []string { return s.protected }

// Contains reports whether p is one of the user's protected files.
func (s Set) Contains(p string) bool {
	_, ok := slices.BinarySearch(s.protected, p)
	return ok
}

// Judge compares an attempt's files with the originals. It returns what
// the judge runs, the attempt with the user's tests restored as they were
// and tampering configuration taken out, and a finding for each way the
// attempt touched the user's tests. The model may add tests of its own;
// with no tests of the user's, there is nothing to judge.
func (s Set) Judge(attempt []workspace.File) (judged []workspace.File, findings []Finding) {
	if len(s.protected) == 0 {
		return attempt, nil
	}
	have := workspace.ByPath(attempt)
	for _, p := range s.protected {
		orig := s.input[p]
		now, ok := have[p]
		switch {
		case !ok:
			findings = append(findings, Finding{Kind: KindDeleted, Path: p})
		case string(now.Data) != string(orig.Data):
			findings = append(findings, compareTest(p, orig.Data, now.Data))
		}
	}
	drop := map[string]bool{}
	for _, f := range attempt {
		if s.Contains(f.Path) {
			continue
		}
		if orig, ok := s.input[f.Path]; ok && string(orig.Data) == string(f.Data) {
			continue
		}
		if why := s.tampering(f); why != "" {
			findings = append(findings, Finding{Kind: KindConfig, Path: f.Path, Detail: why})
			drop[f.Path] = true
		}
	}
	for _, f := range attempt {
		switch {
		case s.Contains(f.Path):
			judged = append(judged, s.input[f.Path])
		case drop[f.Path]:
			if orig, ok := s.input[f.Path]; ok {
				judged = append(judged, orig)
			}
		default:
			judged = append(judged, f)
		}
	}
	for _, p := range s.protected {
		if _, ok := have[p]; !ok {
			judged = append(judged, s.input[p])
		}
	}
	return judged, findings
}

// tampering says how a new or changed file outside the protected set
// changes which of the user's tests run or how, or "" when it does not.
func (s Set) tampering(f workspace.File) string {
	if why := configSelects(f.Path, f.Data); why != "" {
		return why
	}
	switch path.Base(f.Path) {
	case "__init__.py":
		// It runs before the tests beside and below it, and makes them
		// modules of a package.
		if s.hasPythonTestsUnder(path.Dir(f.Path)) {
			return "it runs before the user's tests in that directory"
		}
	case "go.work":
		return "it changes the modules the user's tests build with"
	case "go.mod":
		return s.goModChange(f)
	}
	if isVendored(f.Path) {
		return "it replaces a dependency the user's tests build with"
	}
	return ""
}

// hasPythonTestsUnder reports a Python test file of the user's in dir or
// below it.
func (s Set) hasPythonTestsUnder(dir string) bool {
	for _, p := range s.protected {
		if strings.HasSuffix(p, ".py") && (dir == "." || strings.HasPrefix(p, dir+"/")) {
			return true
		}
	}
	return false
}

// goModChange says how a new or changed go.mod changes what the user's Go
// tests build: a new one splits their module (go test ./... leaves a
// nested module out), a changed module path or replace directive swaps
// the code they test. New requirements are the code's business.
func (s Set) goModChange(f workspace.File) string {
	orig, ok := s.input[f.Path]
	if !ok {
		dir := path.Dir(f.Path)
		for _, p := range s.protected {
			if strings.HasSuffix(p, "_test.go") && (dir == "." || strings.HasPrefix(p, dir+"/")) {
				return "a new module leaves the user's tests out of the run"
			}
		}
		return ""
	}
	if !slices.Equal(modDirectives(orig.Data), modDirectives(f.Data)) {
		return "it changes the module path or a replace directive"
	}
	return ""
}

// modDirectives are a go.mod's module and replace directives, normalized.
func modDirectives(data []byte) []string {
	var out []string
	inReplace := false
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "//")
		fields := strings.Fields(strings.Replace(line, "(", " ( ", 1))
		switch {
		case len(fields) == 0:
		case inReplace:
			if fields[0] == ")" {
				inReplace = false
			} else {
				out = append(out, "replace "+strings.Join(fields, " "))
			}
		case fields[0] == "replace" && len(fields) > 1 && fields[1] == "(":
			inReplace = true
		case fields[0] == "module" || fields[0] == "replace":
			out = append(out, strings.Join(fields, " "))
		}
	}
	slices.Sort(out)
	return out
}

// isVendored reports a file of a vendor directory, which go builds with in
// place of the dependencies go.mod names.
func isVendored(p string) bool {
	return slices.Contains(strings.Split(path.Dir(p), "/"), "vendor") &&
		(strings.HasSuffix(p, ".go") || path.Base(p) == "modules.txt")
}

// runnerFiles are the files a runner named in the test command reads to
// decide which tests it runs.
var runnerFiles = map[string][]string{
	"make": {"Makefile", "makefile", "GNUmakefile"},
	"tox":  {"tox.ini"},
	"nox":  {"noxfile.py"},
	"just": {"justfile", "Justfile", ".justfile"},
}

// namedByCommand returns a matcher for the files and directories the test
// command names, e.g. "pytest tests/test_api.py::test_get" or "go test ./pkg/...".
func namedByCommand(cmd string) func(string) bool {
	var files, dirs []string
	for _, w := range strings.Fields(cmd) {
		w = strings.Trim(w, `"'`)
		if strings.HasPrefix(w, "-") || w == "" {
			continue
		}
		// A runner's own file says what its tests are.
		files = append(files, runnerFiles[w]...)
		w, _, _ = strings.Cut(w, "::")
		w = strings.TrimSuffix(w, "/...")
		w = strings.TrimPrefix(path.Clean(w), "./")
		if w == "." || w == "" || strings.HasPrefix(w, "..") || strings.HasPrefix(w, "/") {
			continue
		}
		files, dirs = append(files, w), append(dirs, w+"/")
	}
	return func(p string) bool {
		if slices.Contains(files, p) {
			return true
		}
		for _, d := range dirs {
			// A named directory protects the tests in it, not its code.
			if strings.HasPrefix(p, d) && IsTestFile(p) {
				return true
			}
		}
		return false
	}
}

// ValidGlob reports a --protect glob that can never match.
func ValidGlob(glob string) error {
	if _, err := path.Match(strings.TrimSuffix(glob, "/**"), ""); err != nil {
		return fmt.Errorf("bad glob %q: %w", glob, err)
	}
	return nil
}

func matchesAny(globs []string, p string) bool {
	for _, g := range globs {
		if dir, ok := strings.CutSuffix(g, "/**"); ok {
			if strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") {
				return true
			}
			continue
		}
		if ok, _ := path.Match(g, p); ok {
			return true
		}
		if !strings.Contains(g, "/") {
			if ok, _ := path.Match(g, path.Base(p)); ok {
				return true
			}
		}
	}
	return false
}
