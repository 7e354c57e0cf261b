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
)

// depsInstallRuns is how many runs each way makes per language and
// backend, after one that warms up.
const depsInstallRuns = 5

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

// BenchmarkDepsInstall measures a check of a project that uses a
// dependency, per backend and language, three ways alternating so that
// all see the same host: cold (activities.Check with no install cached:
// the install, then the tests), cached (the same check with the install
// cached), and bare (the language's test command run on the host, no
// sandbox, over the same install directory). The target is cached ≤ 1.2×
// bare. Python installs a wheel from a PEP 503 index the benchmark
// serves, JavaScript packages from an npm registry it serves, Go
// golang.org/x/text from the module proxy the machine's go command is
// configured with:
//
//	go test -run '^$' -bench DepsInstall -benchtime 1x ./worker/
func BenchmarkDepsInstall(b *testing.B) {
	const target = 1.2
	projects := depsBenchProjects(b)
	type row struct {
		lang, backend           string
		cold, cached, bare, why string
		ratio                   float64
	}
	var rows []row
	for _, backend := range []string{"bwrap", "docker"} {
		for _, p := range projects {
			if p.disabled != "" {
				rows = append(rows, row{lang: p.lang, backend: backend, why: p.disabled})
				continue
			}
			e := newDepsEnv(b, backend, p.private, map[string]string{p.lang: p.index})
			l := languages.MustLookup(p.lang)
			installs := filepath.Join(e.acts.DepsDir, p.lang+"-*")
			check := func(wantDeps string) time.Duration {
				start := time.Now()
				s := e.check(b, p.lang, p.files)
				took := time.Since(start)
				if !s.Passed || !strings.Contains(s.Deps, wantDeps) {
					b.Fatalf("%s %s check: passed=%v stage %s, deps %q, want %q:\n%s", backend, p.lang, s.Passed, s.Stage, s.Deps, wantDeps, s.Output)
				}
				return took
			}
			cold := func() time.Duration {
				old, _ := filepath.Glob(installs)
				for _, dir := range old {
					if err := os.RemoveAll(dir); err != nil {
						b.Fatal(err)
					}
				}
				return check("installed in")
			}
			bare := func() time.Duration {
				dirs, _ := filepath.Glob(installs)
				if len(dirs) != 1 {
					b.Fatalf("installs of %s: %q, want one", p.lang, dirs)
				}
				return runBare(b, l, p, dirs[0])
			}
			var colds, cacheds, bares []time.Duration
			for n := range depsInstallRuns + 1 { // the first round warms up
				var took [3]time.Duration
				for k := range 3 {
					// Each way goes first, second and third equally often;
					// the warm-up round starts cold, and a round starting
					// with cached or bare has the previous round's install.
					switch way := (n + k) % 3; way {
					case 0:
						took[way] = cold()
					case 1:
						took[way] = check("cached")
					default:
						took[way] = bare()
					}
				}
				if n > 0 {
					colds, cacheds, bares = append(colds, took[0]), append(cacheds, took[1]), append(bares, took[2])
				}
			}
			r := row{lang: p.lang, backend: backend, ratio: float64(median(cacheds)) / float64(median(bares))}
			r.cold, r.cached, r.bare = fmtMS(median(colds)), fmtMS(median(cacheds)), fmtMS(median(bares))
			rows = append(rows, r)
			name := backend + "-" + p.lang
			b.ReportMetric(ms(median(colds)), name+"-cold-p50-ms")
			b.ReportMetric(ms(median(cacheds)), name+"-cached-p50-ms")
			b.ReportMetric(ms(median(bares)), name+"-bare-p50-ms")
			b.ReportMetric(r.ratio, name+"-cached/bare")
		}
	}
	fmt.Printf("install + test of a project with a dependency, %d runs each (p50); target: cached ≤ %.1f× bare\n", depsInstallRuns, target)
	fmt.Printf("  %-10s %-7s %10s %10s %10s %12s\n", "language", "backend", "cold", "cached", "bare", "cached/bare")
	for _, r := range rows {
		if r.why != "" {
			fmt.Printf("  %-10s %-7s left out: %s\n", r.lang, r.backend, r.why)
			continue
		}
		verdict := "meets the target"
		if r.ratio > target {
			verdict = "misses the target"
		}
		fmt.Printf("  %-10s %-7s %10s %10s %10s %11.2fx  %s\n", r.lang, r.backend, r.cold, r.cached, r.bare, r.ratio, verdict)
	}
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
func runBare(b *testing.B, l lang.Language, p depsBenchProject, dir string) time.Duration {
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
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		b.Fatalf("%s tests on the bare host: %v\n%s", l.Name, err, out)
	}
	return took
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMS(d time.Duration) string { return fmt.Sprintf("%.0f ms", ms(d)) }
