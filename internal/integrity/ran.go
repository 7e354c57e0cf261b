package integrity

import (
	"go/build"
	"go/build/constraint"
	"path"
	"regexp"
	"slices"
	"strings"
)

// ReportCommand wraps a test command so that the runners the languages use
// list every test they ran, passed or not: pytest with -rfEp (failures,
// errors and passes), go test with -v.
// The judge compares these lists with the originals' (Ran.Missing).
func ReportCommand(cmd []string) []string {
	const script = `export PYTEST_ADDOPTS="-rfEp ${PYTEST_ADDOPTS:-}" GOFLAGS="-v ${GOFLAGS:-}"; exec "$@"`
	return append([]string{"sh", "-c", script, "sh"}, cmd...)
}

// Ran is what a test run reported about its tests.
type Ran struct {
	// Known is set when a runner reported its tests one by one.
	Known  bool     `json:"known"`
	Passed []string `json:"passed,omitempty"`
	// Failed are the tests that ran and failed, or could not be collected.
	Failed  []string `json:"failed,omitempty"`
	Skipped []string `json:"skipped,omitempty"` // by go test
	// Packages are the Go packages go test reported on (ok or FAIL).
	Packages []string `json:"packages,omitempty"`
}

var (
	pytestSummary = regexp.MustCompile(`(?m)^=+ short test summary info =+$`)
	pytestResult  = regexp.MustCompile(`(?m)^(PASSED|FAILED|ERROR) (\S+)`)
	goRun         = regexp.MustCompile(`(?m)^=== RUN\s`)
	goResult      = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): (\S+)`)
	goPackage     = regexp.MustCompile(`(?m)^(?:ok|FAIL)[ \t]+(\S+)`)
)

// ParseRan reads the tests a run reported: pytest's -rfEp summary or go
// test -v's results.
func ParseRan(output string) Ran {
	var r Ran
	add := func(status, id string) {
		switch status {
		case "PASSED", "PASS":
			r.Passed = append(r.Passed, id)
		case "SKIP":
			r.Skipped = append(r.Skipped, id)
		default:
			r.Failed = append(r.Failed, id)
		}
	}
	if loc := pytestSummary.FindStringIndex(output); loc != nil {
		r.Known = true
		for _, m := range pytestResult.FindAllStringSubmatch(output[loc[1]:], -1) {
			add(m[1], m[2])
		}
	}
	if goRun.MatchString(output) {
		r.Known = true
		for _, m := range goResult.FindAllStringSubmatch(output, -1) {
			add(m[1], m[2])
		}
	}
	for _, m := range goPackage.FindAllStringSubmatch(output, -1) {
		r.Packages = append(r.Packages, m[1])
	}
	return r
}

var goModule = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// buildsByDefault reports whether a Go file's build constraint, if any,
// holds for a plain go test on this platform; a file for other platforms
// or tags is not expected to run. Cgo counts as off: sandboxes may lack a
// C compiler.
func buildsByDefault(data []byte) bool {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "package ") {
			return true
		}
		if !constraint.IsGoBuild(line) && !constraint.IsPlusBuild(line) {
			continue
		}
		expr, err := constraint.Parse(line)
		if err != nil {
			return false
		}
		ctx := build.Default
		return expr.Eval(func(tag string) bool {
			return tag == ctx.GOOS || tag == ctx.GOARCH || tag == ctx.Compiler ||
				(tag == "unix" && ctx.GOOS != "windows" && ctx.GOOS != "plan9") ||
				slices.Contains(ctx.ReleaseTags, tag) || slices.Contains(ctx.ToolTags, tag)
		})
	}
	return true
}

// NotRun lists the user's tests a passing run did not run: those the
// originals' run ran (orig, when known; a file pytest could not collect
// stands for the tests it declares), and the Go tests of the user's files
// in packages the run or the originals' run reported on, which covers Go
// code the originals could not build. Runs that select tests (-run, -k)
// are only held to the originals'.
func (s Set) NotRun(cmd string, orig, run Ran) []string {
	var out []string
	miss := func(id string) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	passed := func(id string) bool { return slices.Contains(run.Passed, id) }
	if orig.Known {
		for _, id := range append(slices.Clip(orig.Passed), orig.Failed...) {
			if strings.Contains(id, "::") || !strings.HasSuffix(id, ".py") {
				if !passed(id) {
					miss(id)
				}
				continue
			}
			for _, name := range s.declared(id) {
				if !slices.ContainsFunc(run.Passed, func(p string) bool { return pytestIDNames(p, id, name) }) {
					miss(id + "::" + name)
				}
			}
		}
	}
	if strings.Contains(cmd, "-run") || strings.Contains(cmd, "-skip") {
		return out
	}
	for _, p := range s.protected {
		data := s.input[p].Data
		if !strings.HasSuffix(p, "_test.go") || !buildsByDefault(data) {
			continue
		}
		pkg, ok := s.goImportPath(path.Dir(p))
		if !ok || !slices.Contains(run.Packages, pkg) && !slices.Contains(orig.Packages, pkg) {
			continue
		}
		for _, name := range testNames(p, data) {
			reported := passed(name) || slices.Contains(run.Failed, name) || slices.Contains(run.Skipped, name)
			if strings.HasPrefix(name, "Test") && name != "TestMain" && !reported {
				miss(name)
			}
		}
	}
	return out
}

// declared lists the test functions a file of the user's declares; a file
// that is not the user's stands for any one test of it.
func (s Set) declared(file string) []string {
	if !s.Contains(file) {
		return []string{""}
	}
	var names []string
	for _, n := range testNames(file, s.input[file].Data) {
		if strings.HasPrefix(n, "test") {
			names = append(names, n)
		}
	}
	return names
}

// pytestIDNames reports whether a pytest id is of a test called name
// (any, for "") in file: file::name, file::Class::name, file::name[param].
func pytestIDNames(id, file, name string) bool {
	rest, ok := strings.CutPrefix(id, file+"::")
	if !ok {
		return false
	}
	if name == "" {
		return true
	}
	parts := strings.Split(rest, "::")
	last, _, _ := strings.Cut(parts[len(parts)-1], "[")
	return last == name
}

// goImportPath is the import path of a directory, by the nearest go.mod
// above it in the starting workspace.
func (s Set) goImportPath(dir string) (string, bool) {
	for d := dir; ; d = path.Dir(d) {
		if mod, ok := s.input[path.Join(d, "go.mod")]; ok {
			m := goModule.FindSubmatch(mod.Data)
			if m == nil {
				return "", false
			}
			if d == dir {
				return string(m[1]), true
			}
			return string(m[1]) + "/" + strings.TrimPrefix(dir, d+"/"), true
		}
		if d == "." {
			return "", false
		}
	}
}
