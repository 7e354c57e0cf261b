package worker

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/versions"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// depsInstallRuns is how many runs each way makes per language and
// backend, after one that warms up.
const depsInstallRuns = 5

// modelTurn is the pause before each measured way, unmeasured: what comes
// between two checks of a task.
const modelTurn = time.Second

// depsBenchProject is a project of one language whose tests import what
// it declares, with the registry its install reads and the environment
// its tests need on the bare host, over the language's own.
type depsBenchProject struct {
	lang     string
	files    map[string]string
	private  []string
	index    string
	bareEnv  func(dir string) []string
	disabled string // why the row is left out, if it is
}

// The ways BenchmarkDepsInstall measures, in the order of its table.
const (
	wayCold   = iota // activities.Check, no install cached
	wayCached        // activities.Check, the install cached
	wayBare          // the test command on the host over the same install
	wayRun           // sandbox.Run of the test command with the install
	wayStart         // sandbox.Run of true with the install
	ways
)

// BenchmarkDepsInstall measures a check of a project that uses a
// dependency, per backend and language, alternating the ways so that all
// see the same host: cold (activities.Check with no install cached: the
// install, then the tests), cached (the same check with the install
// cached), and bare (the language's test command run on the host, no
// sandbox, over the same install directory). The target is cached ≤ 1.2×
// bare. Two more ways show where a cached check's time goes: the test
// command in a plain sandbox.Run with the install, and an empty run
// (true) with it, the sandbox's own cost. Python installs a wheel from a
// PEP 503 index the benchmark serves, JavaScript packages from an npm
// registry it serves, Go golang.org/x/text from the module proxy the
// machine's go command is configured with:
//
//	go test -run '^$' -bench DepsInstall -benchtime 1x ./worker/
func BenchmarkDepsInstall(b *testing.B) {
	const target = 1.2
	projects := depsBenchProjects(b)
	type row struct {
		lang, backend, why string
		p50                [ways]time.Duration
	}
	var rows []row
	for _, backend := range []string{"bwrap", "docker"} {
		for _, p := range projects {
			r := row{lang: p.lang, backend: backend, why: p.disabled}
			if r.why == "" {
				r.p50 = benchDepsInstall(b, backend, p)
				name := backend + "-" + p.lang
				for w, what := range []string{"cold", "cached", "bare", "run", "start"} {
					b.ReportMetric(ms(r.p50[w]), name+"-"+what+"-p50-ms")
				}
				b.ReportMetric(float64(r.p50[wayCached])/float64(r.p50[wayBare]), name+"-cached/bare")
			}
			rows = append(rows, r)
		}
	}
	fmt.Printf("install + test of a project with a dependency, %d runs each (p50); target: cached ≤ %.1f× bare\n", depsInstallRuns, target)
	fmt.Printf("  %-10s %-7s %9s %9s %9s %12s %-18s %9s %9s\n", "language", "backend", "cold", "cached", "bare", "cached/bare", "", "run", "empty run")
	for _, r := range rows {
		if r.why != "" {
			fmt.Printf("  %-10s %-7s left out: %s\n", r.lang, r.backend, r.why)
			continue
		}
		ratio := float64(r.p50[wayCached]) / float64(r.p50[wayBare])
		verdict := "meets the target"
		if ratio > target {
			verdict = "misses the target"
		}
		fmt.Printf("  %-10s %-7s %6.0f ms %6.0f ms %6.0f ms %11.2fx %-18s %6.0f ms %6.0f ms\n", r.lang, r.backend,
			ms(r.p50[wayCold]), ms(r.p50[wayCached]), ms(r.p50[wayBare]), ratio, verdict, ms(r.p50[wayRun]), ms(r.p50[wayStart]))
	}
	fmt.Println("  run: the test command in a sandbox.Run with the install, no check around it; empty run: true in one")
}

// benchDepsInstall is the p50 of each way for the project on the backend.
func benchDepsInstall(b *testing.B, backend string, p depsBenchProject) [ways]time.Duration {
	ctx := context.Background()
	e := newDepsEnv(b, backend, p.private, map[string]string{p.lang: p.index})
	l := languages.MustLookup(p.lang)
	installs := filepath.Join(e.acts.DepsDir, p.lang+"-*")
	install := func() string {
		dirs, _ := filepath.Glob(installs)
		if len(dirs) != 1 {
			b.Fatalf("installs of %s: %q, want one", p.lang, dirs)
		}
		return dirs[0]
	}
	check := func(wantDeps string) {
		s := e.check(b, p.lang, p.files)
		if !s.Passed || !strings.Contains(s.Deps, wantDeps) {
			b.Fatalf("%s %s check: passed=%v stage %s, deps %q, want %q:\n%s", backend, p.lang, s.Passed, s.Stage, s.Deps, wantDeps, s.Output)
		}
	}
	var files []workspace.File
	for name, data := range p.files {
		files = append(files, workspace.File{Path: name, Data: []byte(data)})
	}
	run := func(cmd []string) {
		res, err := e.acts.Sandbox.Run(ctx, sandbox.Spec{Profile: p.lang, Files: files, Cmd: cmd, Limits: sandbox.DefaultLimits(),
			Deps: install(), Env: l.Deps.Env, DepsLink: l.Deps.Link})
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("%s %s sandbox run of %q: %v %+v", backend, p.lang, cmd, err, res)
		}
	}
	do := [ways]func(){
		wayCold: func() {
			old, _ := filepath.Glob(installs)
			for _, dir := range old {
				if err := os.RemoveAll(dir); err != nil {
					b.Fatal(err)
				}
			}
			check("dependencies: installed in")
		},
		wayCached: func() { check("dependencies: cached") },
		wayBare:   func() { runBare(b, l, p, install()) },
		wayRun:    func() { run(l.Tests.Command) },
		wayStart:  func() { run([]string{"true"}) },
	}
	var took [ways][]time.Duration
	for n := range depsInstallRuns + 1 { // the first round warms up
		// Each way takes each place in a round equally often; the
		// warm-up round starts cold, and every later one has the
		// previous round's install until its cold run.
		for k := range ways {
			way := (n + k) % ways
			// In a task a model turn of seconds comes between two
			// checks, in which the sandbox's refills end.
			time.Sleep(modelTurn)
			start := time.Now()
			do[way]()
			if n > 0 {
				took[way] = append(took[way], time.Since(start))
			}
		}
	}
	var p50 [ways]time.Duration
	for w := range ways {
		p50[w] = median(took[w])
	}
	return p50
}

// depsBenchProjects are the projects BenchmarkDepsInstall checks, with
// the registries it serves them from.
func depsBenchProjects(b *testing.B) []depsBenchProject {
	name, whl := registrytest.PureWheel(b, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
	pyIndex := registrytest.NewPyIndex(b, map[string][]byte{name: whl})
	npm := registrytest.NewNpmRegistry(b, npmPackages()...)
	goproxy := versions.Configured(context.Background(), golang.Language().Deps.Versions.Configured)
	goCache := b.TempDir()
	projects := []depsBenchProject{
		{lang: "python", private: []string{pyIndex.Host()}, index: pyIndex.URL(),
			files: map[string]string{
				"requirements.txt": "greetlib==1.0\n",
				"test_greet.py":    "import greetlib\n\n\ndef test_hello():\n    assert greetlib.hello() == 'hello from greetlib'\n",
			},
			// Debian's python3, which has pytest, as the sandbox's.
			bareEnv: func(string) []string { return []string{"PATH=/usr/bin:" + os.Getenv("PATH")} }},
		{lang: "javascript", private: []string{npm.Host()}, index: npm.URL(),
			files: map[string]string{
				"package.json": `{"name": "app", "version": "1.0.0", "private": true, "scripts": {"test": "tinytest"},
  "dependencies": {"greet": "1.2.0"}, "devDependencies": {"tinytest": "0.3.0"}}
`,
				"greet.test.js": "const test = require('node:test');\nconst assert = require('node:assert/strict');\nconst { loud } = require('greet');\n\n" +
					"test('greet', () => assert.equal(loud(), 'HELLO FROM GREET'));\n",
			}},
		{lang: "go", index: goproxy,
			files: map[string]string{
				"go.mod": "module example.com/narrow\n\ngo 1.21\n\nrequire " + textModule + "\n",
				"go.sum": textSum,
				"narrow_test.go": "package narrow\n\nimport (\n\t\"testing\"\n\n\t\"golang.org/x/text/width\"\n)\n\n" +
					"func TestFold(t *testing.T) {\n\tif got := width.Fold.String(\"ｈｉ\"); got != \"hi\" {\n\t\tt.Fatal(got)\n\t}\n}\n",
			},
			// The host's own build cache, warm after the first round, as
			// a developer's would be.
			bareEnv: func(string) []string {
				return []string{"GOCACHE=" + goCache, "GOPATH=" + goCache, "GOFLAGS=-mod=mod", "GOTMPDIR="}
			}},
	}
	if goproxy == "" || goproxy == "off" {
		projects[2].disabled = "the go command has no module proxy (go env GOPROXY)"
	}
	return projects
}

// runBare runs the language's test command over the project on the host,
// with the install at dir in the place the sandbox gives it: its
// environment (lang.Deps.Env with lang.DepsDir as dir) and its link in
// the project (lang.Deps.Link).
func runBare(b *testing.B, l lang.Language, p depsBenchProject, dir string) {
	project := b.TempDir()
	for name, data := range p.files {
		if err := os.WriteFile(filepath.Join(project, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if l.Deps.Link != "" {
		if err := os.Symlink(filepath.Join(dir, l.Deps.Link), filepath.Join(project, l.Deps.Link)); err != nil {
			b.Fatal(err)
		}
	}
	env := os.Environ()
	for _, vars := range []map[string]string{l.Sandbox.Env, l.Deps.Env} {
		for _, k := range slices.Sorted(maps.Keys(vars)) {
			env = append(env, k+"="+strings.ReplaceAll(vars[k], lang.DepsDir, dir))
		}
	}
	if p.bareEnv != nil {
		env = append(env, p.bareEnv(dir)...)
	}
	// sh finds the command on the environment's PATH.
	cmd := exec.Command("sh", append([]string{"-c", `exec "$@"`, "sh"}, l.Tests.Command...)...)
	cmd.Dir, cmd.Env = project, env
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s tests on the bare host: %v\n%s", l.Name, err, out)
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
