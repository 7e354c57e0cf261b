// Package repogen generates a realistic, deterministic repository for tests
// and benchmarks that need a project too large to show a model whole: a
// Python package several levels deep with its pytest suite, a Go module
// beside it, and one planted bug in a file deep in the tree that exactly
// one test catches. The same seed always gives the same files.
package repogen

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Options shape a repository. A zero field takes its value from Defaults.
type Options struct {
	Seed int64
	// Areas are the top-level subpackages of the Python package; each has
	// three subpackages of ModulesPerPackage modules.
	Areas             int
	ModulesPerPackage int
	FunctionsPerFile  int
	GoPackages        int // Go packages of GoFilesPerPackage files each
	GoFilesPerPackage int
}

// Defaults give a repository of about 340 files and 2.2 MiB.
var Defaults = Options{Areas: 8, ModulesPerPackage: 10, FunctionsPerFile: 24, GoPackages: 6, GoFilesPerPackage: 5}

// Bug is the planted bug and how to fix it.
type Bug struct {
	Path    string // the Python module holding it, deep in the tree
	Symbol  string // the function that is wrong
	Line    int    // the line of Buggy in Path
	Buggy   string // text occurring exactly once in Path
	Fixed   string // what Buggy must become
	Test    string // the test file that fails until it is fixed
	Symptom string // what a user would report
}

// Repo is a generated repository.
type Repo struct {
	Files []workspace.File // in workspace order
	Bug   Bug
	// TestCmd runs the whole Python suite from the repository root.
	TestCmd string
}

// Size returns the total bytes of the repository's files.
func (r Repo) Size() int {
	n := 0
	for _, f := range r.Files {
		n += len(f.Data)
	}
	return n
}

// Fix returns the files with the bug fixed.
func (r Repo) Fix() []workspace.File {
	out := make([]workspace.File, len(r.Files))
	copy(out, r.Files)
	for i, f := range out {
		if f.Path == r.Bug.Path {
			out[i].Data = []byte(strings.Replace(string(f.Data), r.Bug.Buggy, r.Bug.Fixed, 1))
		}
	}
	return out
}

// Generate builds the repository for opts.
func Generate(opts Options) Repo {
	opts = opts.withDefaults()
	g := &gen{rng: rand.New(rand.NewPCG(uint64(opts.Seed), 0x5eed)), opts: opts, used: map[string]bool{}}
	g.python()
	g.golang()
	g.add("README.md", fmt.Sprintf("# acme\n\nOrder processing for the Acme store: %s.\n\nRun the tests with `%s`.\n",
		strings.Join(areaNames[:opts.Areas], ", "), testCmd))
	g.add("conftest.py", "# The repository root on sys.path lets the tests import acme.\n")
	g.add("pytest.ini", "[pytest]\ntestpaths = tests\n")
	workspace.Sort(g.files)
	return Repo{Files: g.files, Bug: g.bug, TestCmd: testCmd}
}

const testCmd = "python3 -m pytest -q"

func (o Options) withDefaults() Options {
	d := Defaults
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	o.Areas = min(pick(o.Areas, d.Areas), len(areaNames))
	o.ModulesPerPackage = pick(o.ModulesPerPackage, d.ModulesPerPackage)
	o.FunctionsPerFile = pick(o.FunctionsPerFile, d.FunctionsPerFile)
	o.GoPackages = pick(o.GoPackages, d.GoPackages)
	o.GoFilesPerPackage = pick(o.GoFilesPerPackage, d.GoFilesPerPackage)
	return o
}

type gen struct {
	rng   *rand.Rand
	opts  Options
	files []workspace.File
	used  map[string]bool // identifiers taken, so every symbol is unique
	bug   Bug
}

func (g *gen) add(path, content string) {
	g.files = append(g.files, workspace.File{Path: path, Data: []byte(content)})
}

var (
	areaNames = []string{"billing", "catalog", "inventory", "shipping", "accounts", "reports", "search", "notify"}
	subNames  = []string{"core", "adapters", "rules"}
	verbs     = []string{"compute", "resolve", "merge", "build", "normalize", "validate", "render", "load", "apply", "split",
		"collect", "score", "rank", "group", "estimate", "reconcile", "format", "parse", "sync", "allocate"}
	nouns = []string{"order", "invoice", "ledger", "item", "bundle", "quote", "batch", "parcel", "route", "account",
		"report", "query", "message", "tariff", "voucher", "refund", "shelf", "supplier", "receipt", "window"}
	fillers = []string{
		"The result is stable for equal inputs and never mutates its arguments.",
		"Callers in the adapters layer rely on the rounding applied here.",
		"Values outside the documented range are clamped rather than rejected.",
		"This mirrors the behaviour of the legacy batch job, kept for compatibility.",
		"Large inputs are processed in one pass; no intermediate lists are kept.",
		"The thresholds come from the operations handbook, section four.",
	}
)

// name returns a fresh identifier made of a verb and a noun.
func (g *gen) name() string {
	for i := 0; ; i++ {
		n := verbs[g.rng.IntN(len(verbs))] + "_" + nouns[g.rng.IntN(len(nouns))]
		if i > 3 {
			n += fmt.Sprintf("_%d", g.rng.IntN(1000))
		}
		if !g.used[n] {
			g.used[n] = true
			return n
		}
	}
}

func (g *gen) filler() string { return fillers[g.rng.IntN(len(fillers))] }

func camel(snake string) string {
	var b strings.Builder
	for _, part := range strings.Split(snake, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
