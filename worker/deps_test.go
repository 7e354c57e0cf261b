package worker

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/lang/golang"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/registrytest"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/versions"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// depsEnv is the activities with a real sandbox of the backend, the
// worker's egress proxy with the private registries (host:port of the
// registries a test serves), the languages' indexes, and a deps cache of
// the test's.
type depsEnv struct {
	acts *activities.Activities
	tenv *testsuite.TestActivityEnvironment
}

func newDepsEnv(t testing.TB, backend string, private []string, indexes map[string]string) *depsEnv {
	t.Helper()
	return newDepsEnvOf(t, backend, sandbox.ProfilesOf(languages.All()), private, indexes)
}

// newDepsEnvOf is newDepsEnv with the sandbox's profiles given.
func newDepsEnvOf(t testing.TB, backend string, profiles []sandbox.Profile, private []string, indexes map[string]string) *depsEnv {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// Tests run without warm sandboxes; a benchmark measures a worker
	// as it runs, with them.
	pool := -1
	if _, ok := t.(*testing.B); ok {
		pool = 0
	}
	sb, err := sandbox.New(ctx, sandbox.Config{Backend: backend, PoolSize: pool, Forwarder: testenv.Forwarder(t, false),
		Profiles: profiles})
	if err != nil {
		testenv.RequireService(t, "the "+backend+" sandbox", err)
	}
	t.Cleanup(func() { sb.Close() })
	eg, err := StartEgress(egress.Config{Registries: private}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eg.Close() })
	// Not under t.TempDir(), whose parent the sandbox's user cannot enter.
	deps, err := os.MkdirTemp("", "autocoder-deps-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(deps) })
	acts := &activities.Activities{Store: st, Sandbox: sb, Egress: eg.Routes(), DepsDir: deps, DepsIndexes: indexes}
	var s testsuite.WorkflowTestSuite
	tenv := s.NewTestActivityEnvironment()
	tenv.RegisterActivity(acts)
	return &depsEnv{acts: acts, tenv: tenv}
}

func (e *depsEnv) check(t testing.TB, lang string, files map[string]string) activities.TestSummary {
	t.Helper()
	var fs []workspace.File
	for p, d := range files {
		fs = append(fs, workspace.File{Path: p, Data: []byte(d)})
	}
	id, err := e.acts.Store.PutSnapshot(context.Background(), fs)
	if err != nil {
		t.Fatal(err)
	}
	// The tests try the network themselves: the policy would stop them.
	v, err := e.tenv.ExecuteActivity(e.acts.Check, activities.CheckInput{SnapshotID: id, Language: lang, IgnorePolicy: true})
	if err != nil {
		t.Fatal(err)
	}
	var s activities.TestSummary
	if err := v.Get(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCheckInstallsPythonDeps: a project whose requirements.txt names a
// package of a PEP 503 index the test serves (a private registry, and
// pip's index) has it installed through the egress proxy before its
// tests, which import it; a second check with the same requirements
// reuses the install without a download; the tests themselves cannot
// reach the index. A requirement the index lacks is a failed check whose
// output is pip's, not an error.
func TestCheckInstallsPythonDeps(t *testing.T) {
	name, whl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello from greetlib'\n")
	index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
	e := newDepsEnv(t, "bwrap", []string{index.Host()}, map[string]string{"python": index.URL()})
	project := map[string]string{
		"requirements.txt": "# what the code needs\ngreetlib==1.0\n",
		"test_greet.py": fmt.Sprintf(`import urllib.request

import greetlib


def test_hello():
    assert greetlib.hello() == "hello from greetlib"


def test_no_network():
    try:
        urllib.request.urlopen(%q, timeout=3)
    except OSError:
        return
    raise AssertionError("the test run reached the index")
`, index.URL()),
	}
	s := e.check(t, "python", project)
	if !s.Passed {
		t.Fatalf("first check failed (stage %s): %s", s.Stage, s.Output)
	}
	if n := index.Downloads(); n != 1 {
		t.Errorf("wheel downloads after the first check: %d, want 1", n)
	}
	t.Logf("first check: %s; %s", s.Deps, s.Output)
	if !strings.Contains(s.Deps, "installed in") {
		t.Errorf("the first check's deps note: %q", s.Deps)
	}

	s = e.check(t, "python", project)
	if !s.Passed {
		t.Fatalf("second check failed (stage %s): %s", s.Stage, s.Output)
	}
	if n := index.Downloads(); n != 1 {
		t.Errorf("wheel downloads after the second check: %d, want 1 (the install is cached)", n)
	}
	if !strings.Contains(s.Deps, "dependencies: cached") {
		t.Errorf("the second check's deps note: %q", s.Deps)
	}

	project["requirements.txt"] = "greetlib==1.0\nno-such-package==2.0\n"
	s = e.check(t, "python", project)
	t.Logf("missing package: %s\n%s", s.Deps, s.Output)
	if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "no-such-package") {
		t.Errorf("a missing package: passed=%v stage=%q output:\n%s", s.Passed, s.Stage, s.Output)
	}
}

// TestCheckReinstallsForAnotherToolchain: an install is kept for the
// toolchain it was made with. When the host's interpreter is replaced (an
// upgrade: here its file is rewritten), the next check installs again
// rather than mount packages built for the old one; until then it reuses
// the install.
func TestCheckReinstallsForAnotherToolchain(t *testing.T) {
	name, whl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hello'\n")
	index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
	interp := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(interp, []byte("interpreter 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	profiles := sandbox.ProfilesOf(languages.All())
	for i := range profiles {
		if profiles[i].Name == "python" {
			profiles[i].HostToolchain = interp
		}
	}
	e := newDepsEnvOf(t, "bwrap", profiles, []string{index.Host()}, map[string]string{"python": index.URL()})
	project := map[string]string{
		"requirements.txt": "greetlib==1.0\n",
		"test_greet.py":    "import greetlib\n\n\ndef test_hello():\n    assert greetlib.hello() == 'hello'\n",
	}
	for i, want := range []string{"installed in", "dependencies: cached", "installed in", "dependencies: cached"} {
		if i == 2 {
			if err := os.WriteFile(interp, []byte("interpreter 2, upgraded\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		s := e.check(t, "python", project)
		if !s.Passed || !strings.Contains(s.Deps, want) {
			t.Fatalf("check %d: passed=%v deps %q, want %q; output:\n%s", i+1, s.Passed, s.Deps, want, s.Output)
		}
	}
	if n := index.Downloads(); n != 2 {
		t.Errorf("wheel downloads: %d, want 2 (one per toolchain)", n)
	}
}

// textModule is golang.org/x/text, a module of the Go team, at a version
// the Go module proxy serves, and its go.sum lines as go mod tidy writes
// them.
const (
	textModule = "golang.org/x/text v0.21.0"
	textSum    = "golang.org/x/text v0.21.0 h1:zyQAAkrwaneQ066sspRyJaG9VNi/YJ1NfzcGB3hZ/qo=\n" +
		"golang.org/x/text v0.21.0/go.mod h1:4IBbMaMmOPCJ8SecivzSH54+73PCFmPWxNTLm+vZkEQ=\n"
)

// TestCheckInstallsGoModules: a Go project whose go.mod requires
// golang.org/x/text has it downloaded, through the egress proxy, from the
// Go module proxy this machine's go command is configured with (go env
// GOPROXY, as the worker reads it) before its tests, which import it and
// pass over the read-only module cache with the go.sum go mod tidy
// writes; a second check reuses the install; the tests themselves cannot
// reach the module proxy. Without go.sum the tests fail with Go's own
// message, as the user's go test would. A worker whose installs are off
// fails the check and says what to do.
func TestCheckInstallsGoModules(t *testing.T) {
	goproxy := versions.Configured(context.Background(), golang.Language().Deps.Versions.Configured)
	e := newDepsEnv(t, "bwrap", nil, map[string]string{"go": goproxy})
	first, _, _ := strings.Cut(goproxy, ",")
	proxyAddr := "localhost:443"
	if u, err := url.Parse(first); err == nil && u.Host != "" {
		proxyAddr = net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), "443"))
	}
	project := map[string]string{
		"go.mod": "module example.com/narrow\n\ngo 1.21\n\nrequire " + textModule + "\n",
		"go.sum": textSum,
		"narrow.go": `package narrow

import "golang.org/x/text/width"

// Narrow folds full-width letters to their usual width.
func Narrow(s string) string { return width.Fold.String(s) }
`,
		"tag_test.go": "package narrow\n\nimport (\n\t\"testing\"\n\n\t\"golang.org/x/text/language\"\n)\n\n" +
			"func TestTag(t *testing.T) {\n\tif got := language.English.String(); got != \"en\" {\n\t\tt.Fatal(got)\n\t}\n}\n",
		"narrow_test.go": fmt.Sprintf(`package narrow

import (
	"net"
	"testing"
	"time"
)

func TestNarrow(t *testing.T) {
	if got := Narrow("ｈｅｌｌｏ"); got != "hello" {
		t.Fatalf("Narrow: %%q", got)
	}
}

func TestNoNetwork(t *testing.T) {
	if c, err := net.DialTimeout("tcp", %q, 3*time.Second); err == nil {
		c.Close()
		t.Fatal("the test run reached the module proxy")
	}
}
`, proxyAddr),
	}
	s := e.check(t, "go", project)
	t.Logf("first check: %s\n%s", s.Deps, s.Output)
	if !s.Passed || !strings.Contains(s.Deps, "installed in") {
		t.Fatalf("first check: passed=%v stage %s, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}
	s = e.check(t, "go", project)
	if !s.Passed || !strings.Contains(s.Deps, "dependencies: cached") {
		t.Errorf("second check: passed=%v, deps %q:\n%s", s.Passed, s.Deps, s.Output)
	}
	checkWarmGoCache(t, e, project)

	// A module of the project's own, replaced by its directory: the
	// install reads its go.mod, and downloads only what is remote.
	local := maps.Clone(project)
	local["go.mod"] = "module example.com/narrow\n\ngo 1.21\n\nrequire (\n\t" + textModule + "\n\texample.com/shout v0.0.0\n)\n\nreplace example.com/shout => ./shout\n"
	local["shout/go.mod"] = "module example.com/shout\n\ngo 1.21\n"
	local["shout/shout.go"] = "package shout\n\nimport \"strings\"\n\n// Shout is s in capitals.\nfunc Shout(s string) string { return strings.ToUpper(s) }\n"
	local["loud_test.go"] = "package narrow\n\nimport (\n\t\"testing\"\n\n\t\"example.com/shout\"\n)\n\nfunc TestLoud(t *testing.T) {\n\tif got := shout.Shout(Narrow(\"ｈｉ\")); got != \"HI\" {\n\t\tt.Fatal(got)\n\t}\n}\n"
	s = e.check(t, "go", local)
	if !s.Passed || !strings.Contains(s.Deps, "installed in") {
		t.Errorf("a module replaced by a directory: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}
	checkNoProjectCode(t, e, "narrow.Narrow", "TestNarrow", "shout.Shout")

	delete(project, "go.sum")
	s = e.check(t, "go", project)
	if s.Passed || s.Stage != "test" || !strings.Contains(s.Output, "missing go.sum entry") || !strings.Contains(s.Deps, "dependencies: cached") {
		t.Errorf("without go.sum: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}

	project["go.sum"] = textSum
	e.acts.Egress = nil
	s = e.check(t, "go", project)
	t.Logf("installs off: %s\n%s", s.Deps, s.Output)
	if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "turn installs on") || !strings.Contains(s.Deps, "installs are off") {
		t.Errorf("installs off: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}
}

// checkWarmGoCache: the install's warm-up built the module's packages the
// project and its tests import (golang.org/x/text/language through its
// module's internal packages), so the tests over the install compile the
// project's own package (changed since) and not them.
func checkWarmGoCache(t *testing.T, e *depsEnv, project map[string]string) {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(e.acts.DepsDir, "go-*"))
	if len(dirs) != 1 {
		t.Fatalf("go installs: %q, want one", dirs)
	}
	files := []workspace.File{{Path: "changed.go", Data: []byte("package narrow\n\nconst changed = true\n")}}
	for p, d := range project {
		files = append(files, workspace.File{Path: p, Data: []byte(d)})
	}
	res, err := e.acts.Sandbox.Run(context.Background(), sandbox.Spec{Profile: "go", Files: files, Deps: dirs[0], Env: golang.Language().Deps.Env,
		Cmd: []string{"sh", "-c", "go test -x -count=1 -run TestTag ./... 2>&1"}, Limits: sandbox.DefaultLimits()})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("go test over the install: %v, exit %d:\n%s", err, res.ExitCode, res.Stdout)
	}
	if own := " -p example.com/narrow "; !strings.Contains(res.Stdout, own) {
		t.Errorf("the tests did not compile the project's package (%q):\n%s", own, res.Stdout)
	}
	for _, dep := range []string{" -p golang.org/x/text/width ", " -p golang.org/x/text/language ", " -p golang.org/x/text/internal/language "} {
		if strings.Contains(res.Stdout, dep) {
			t.Errorf("the tests compiled %q again, which the install's warm-up built:\n%s", dep, res.Stdout)
		}
	}
}

// checkNoProjectCode: no install's build cache holds any link, or code of
// the project's (the markers: names from it), which other tasks with the
// same manifests could read. The module's path is no secret: go.mod has it.
func checkNoProjectCode(t *testing.T, e *depsEnv, markers ...string) {
	t.Helper()
	caches, _ := filepath.Glob(filepath.Join(e.acts.DepsDir, "go-*", "gocache"))
	if len(caches) == 0 {
		t.Fatal("no install has a build cache")
	}
	for _, cache := range caches {
		err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			if d.Type()&fs.ModeSymlink != 0 {
				t.Errorf("an install's build cache keeps a link: %s", p)
				return nil
			}
			data, err := os.ReadFile(p)
			for _, m := range markers {
				if err == nil && bytes.Contains(data, []byte(m)) {
					t.Errorf("an install's build cache holds the project's code (%s): %s", m, p)
				}
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckInstallsPrivateGoModules: a module of a private module proxy
// (one the test serves, named as the worker's GOPROXY and a private
// registry), which the checksum database does not know, installs when
// the worker's go env names it in GONOSUMDB (or GOPRIVATE), and the
// install says what failed when it does not.
func TestCheckInstallsPrivateGoModules(t *testing.T) {
	proxy := registrytest.NewGoProxy(t, registrytest.GoModule{Path: "corp.test/greet", Version: "v1.0.0",
		Files: map[string]string{"greet.go": "package greet\n\n// Hello greets.\nfunc Hello() string { return \"hello from corp\" }\n"}})
	e := newDepsEnv(t, "bwrap", []string{proxy.Host()}, map[string]string{"go": proxy.URL()})
	project := map[string]string{
		"go.mod": "module example.com/app\n\ngo 1.21\n\nrequire corp.test/greet v1.0.0\n",
		"app_test.go": `package app

import (
	"testing"

	"corp.test/greet"
)

func TestGreet(t *testing.T) {
	if got := greet.Hello(); got != "hello from corp" {
		t.Fatal(got)
	}
}
`,
	}
	// The install asks the checksum database about the module go.sum
	// does not name.
	s := e.check(t, "go", project)
	t.Logf("without GONOSUMDB: %s\n%s", s.Deps, s.Output)
	if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "corp.test/greet") {
		t.Errorf("without GONOSUMDB: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}

	e.acts.DepsHostEnv = map[string]map[string]string{"go": {"GONOSUMDB": "corp.test"}}
	s = e.check(t, "go", project)
	if s.Passed || s.Stage != "test" || !strings.Contains(s.Deps, "installed in") || !strings.Contains(s.Output, "missing go.sum entry") {
		t.Errorf("with GONOSUMDB, without go.sum: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
	}
	project["go.sum"] = proxy.GoSum()
	s = e.check(t, "go", project)
	if !s.Passed || !strings.Contains(s.Deps, "dependencies: cached") || proxy.Downloads() != 1 {
		t.Errorf("with go.sum: passed=%v stage %q, deps %q, %d downloads (want 1):\n%s", s.Passed, s.Stage, s.Deps, proxy.Downloads(), s.Output)
	}
}

// npmPackages are what the npm registry of TestCheckInstallsNpmDeps
// serves: greet (CommonJS, with its types) needs the scoped @acme/shout,
// tinytest is a test runner whose bin runs node --test, and typescript's
// tsc says it is the project's and runs the one on the PATH.
func npmPackages() []registrytest.NpmPackage {
	return []registrytest.NpmPackage{
		{Name: "@acme/shout", Version: "1.0.0", Files: map[string]string{
			"index.js": "module.exports = (s) => s.toUpperCase();\n"}},
		{Name: "greet", Version: "1.2.0", Dependencies: map[string]string{"@acme/shout": "^1.0.0"}, Files: map[string]string{
			"index.js":   "const shout = require('@acme/shout');\nexports.hello = () => 'hello from greet';\nexports.loud = () => shout(exports.hello());\n",
			"index.d.ts": "export declare function hello(): string;\nexport declare function loud(): string;\n"}},
		{Name: "tinytest", Version: "0.3.0", Bin: map[string]string{"tinytest": "bin/tinytest.js"}, Files: map[string]string{
			"bin/tinytest.js": `#!/usr/bin/env node
console.log('tinytest runs node --test');
const r = require('node:child_process').spawnSync(process.execPath, ['--test', '--test-reporter=tap'], { stdio: 'inherit' });
process.exit(r.status === null ? 1 : r.status);
`}},
		{Name: "typescript", Version: "5.0.0", Bin: map[string]string{"tsc": "bin/tsc"}, Files: map[string]string{
			"bin/tsc": `#!/usr/bin/env node
console.log("the project's own tsc");
const r = require('node:child_process').spawnSync('tsc', process.argv.slice(2), { stdio: 'inherit' });
process.exit(r.status === null ? 1 : r.status);
`}},
	}
}

// TestCheckInstallsNpmDeps: on both backends, a JavaScript project whose
// package.json names a package of an npm registry the test serves (a
// private registry, and npm's registry), with a scoped dependency of its
// own, and a test runner in devDependencies, has them installed through
// the egress proxy before its tests: its "test" script is the runner's
// bin, and its tests find the package by require and by ESM import, and
// cannot reach the registry. A second check reuses the install without a
// download. A TypeScript project compiles against the package's types and
// runs. A monorepo's workspaces and file: packages are linked. A package the registry lacks is a failed check at stage install
// with npm's message.
func TestCheckInstallsNpmDeps(t *testing.T) {
	for _, backend := range []string{"docker", "bwrap"} {
		t.Run(backend, func(t *testing.T) {
			reg := registrytest.NewNpmRegistry(t, npmPackages()...)
			e := newDepsEnv(t, backend, []string{reg.Host()}, map[string]string{"javascript": reg.URL(), "typescript": reg.URL()})
			js := map[string]string{
				"package.json": `{"name": "app", "version": "1.0.0", "private": true, "scripts": {"test": "tinytest"},
  "dependencies": {"greet": "1.2.0"}, "devDependencies": {"tinytest": "0.3.0"}}
`,
				"greet.test.js": fmt.Sprintf(`const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { hello, loud } = require('greet');

test('require finds greet and its dependency', () => {
  assert.equal(hello(), 'hello from greet');
  assert.equal(loud(), 'HELLO FROM GREET');
});

test('the tests have no network', async () => {
  const reached = await new Promise((resolve) => {
    const req = http.get(%q, () => resolve(true));
    req.on('error', () => resolve(false));
    req.setTimeout(3000, () => { req.destroy(); resolve(false); });
  });
  assert.equal(reached, false, 'the test run reached the registry');
});
`, reg.URL()+"greet"),
				"greet.test.mjs": `import test from 'node:test';
import assert from 'node:assert/strict';
import greet, { loud } from 'greet';

test('import finds greet', () => {
  assert.equal(greet.hello(), 'hello from greet');
  assert.equal(loud(), 'HELLO FROM GREET');
});
`,
			}
			start := time.Now()
			s := e.check(t, "javascript", js)
			if !s.Passed {
				t.Fatalf("first check failed (stage %s, %s): %s", s.Stage, s.Deps, s.Output)
			}
			cold := time.Since(start)
			t.Logf("first check: %s; %s", s.Deps, s.Output)
			for _, want := range []string{"tinytest runs node --test", "require finds greet", "import finds greet", "the tests have no network", "# pass 3"} {
				if !strings.Contains(s.Output, want) {
					t.Errorf("the first check's output lacks %q:\n%s", want, s.Output)
				}
			}
			if n := reg.Downloads(); n != 3 {
				t.Errorf("tarball downloads after the first check: %d, want 3", n)
			}
			if !strings.Contains(s.Deps, "installed in") {
				t.Errorf("the first check's deps note: %q", s.Deps)
			}

			start = time.Now()
			s = e.check(t, "javascript", js)
			if !s.Passed {
				t.Fatalf("second check failed (stage %s): %s", s.Stage, s.Output)
			}
			t.Logf("check with the install: %s; with the cached install: %s", cold.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			if n := reg.Downloads(); n != 3 || !strings.Contains(s.Deps, "dependencies: cached") {
				t.Errorf("after the second check: %d tarball downloads (want 3: the install is cached), deps note %q", n, s.Deps)
			}

			// The lock file npm wrote, which the model may copy into the
			// project: npm ci installs what it pins.
			locks, _ := filepath.Glob(filepath.Join(e.acts.DepsDir, "javascript-*", "package-lock.json"))
			if len(locks) != 1 {
				t.Fatalf("lock files of the install: %q, want one", locks)
			}
			lock, err := os.ReadFile(locks[0])
			if err != nil {
				t.Fatal(err)
			}
			locked := maps.Clone(js)
			locked["package-lock.json"] = string(lock)
			s = e.check(t, "javascript", locked)
			if !s.Passed || !strings.Contains(s.Deps, "installed in") || reg.Downloads() != 6 {
				t.Errorf("with the lock file (stage %s, %s, %d downloads in all, want 6): passed=%v\n%s", s.Stage, s.Deps, reg.Downloads(), s.Passed, s.Output)
			}

			// The project's devDependencies install a TypeScript of its
			// own (here one that says so, then runs the image's): the
			// tests compile with it.
			ts := map[string]string{
				"package.json":  `{"name": "app", "version": "1.0.0", "private": true, "dependencies": {"greet": "1.2.0"}, "devDependencies": {"typescript": "5.0.0"}}` + "\n",
				"tsconfig.json": `{"compilerOptions": {"target": "ES2020", "module": "commonjs", "strict": true, "esModuleInterop": true}}` + "\n",
				"greet.test.ts": `import test from "node:test";
import assert from "node:assert/strict";
import { loud } from "greet";

test("typed import of greet", () => {
  const s: string = loud();
  assert.equal(s, "HELLO FROM GREET");
});
`,
			}
			s = e.check(t, "typescript", ts)
			if !s.Passed || !strings.Contains(s.Output, "typed import of greet") || !strings.Contains(s.Output, "the project's own tsc") {
				t.Errorf("the TypeScript check (stage %s, %s): passed=%v\n%s", s.Stage, s.Deps, s.Passed, s.Output)
			}

			// A monorepo: npm workspaces (a glob) and a file: package. The
			// install reads their package.json files and links them; the
			// tests require them and run their sources as they are now, so
			// an edit of a workspace's code needs no new install.
			mono := map[string]string{
				"package.json": `{"name": "mono", "version": "1.0.0", "private": true, "workspaces": ["packages/*"],
  "dependencies": {"util-local": "file:libs/util"}}` + "\n",
				"packages/twice/package.json": `{"name": "twice", "version": "1.0.0", "main": "index.js", "dependencies": {"greet": "1.2.0"}}` + "\n",
				"packages/twice/index.js":     "const { loud } = require('greet');\nmodule.exports = () => loud() + ' ' + loud();\n",
				"libs/util/package.json":      `{"name": "util-local", "version": "0.1.0", "main": "index.js"}` + "\n",
				"libs/util/index.js":          "exports.where = () => 'local util';\n",
				"mono.test.js": `const test = require('node:test');
const assert = require('node:assert/strict');
test('a workspace and a file: package', () => {
  assert.equal(require('twice')(), 'HELLO FROM GREET HELLO FROM GREET');
  assert.equal(require('util-local').where(), 'local util');
});
`,
			}
			s = e.check(t, "javascript", mono)
			if !s.Passed || !strings.Contains(s.Deps, "installed in") || !strings.Contains(s.Output, "a workspace and a file: package") {
				t.Errorf("workspaces (stage %s, %s): passed=%v\n%s", s.Stage, s.Deps, s.Passed, s.Output)
			}
			mono["libs/util/index.js"] = "exports.where = () => 'edited util';\n"
			s = e.check(t, "javascript", mono)
			if s.Passed || !strings.Contains(s.Deps, "dependencies: cached") || !strings.Contains(s.Output, "edited util") {
				t.Errorf("an edit of a file: package's code, seen by the tests without a new install (stage %s, %s): passed=%v\n%s", s.Stage, s.Deps, s.Passed, s.Output)
			}

			// The project's .npmrc names its own registry for the @acme
			// scope: the install asks that one, which the proxy refuses,
			// and never takes @acme/shout from the default registry.
			scoped := maps.Clone(js)
			scoped[".npmrc"] = "@acme:registry=http://127.0.0.1:9/\n"
			s = e.check(t, "javascript", scoped)
			if s.Passed || s.Stage != "install" || !strings.Contains(s.Deps, "refused 127.0.0.1:9") {
				t.Errorf("a scope's own registry: passed=%v stage=%q deps %q\n%s", s.Passed, s.Stage, s.Deps, s.Output)
			}

			js["package.json"] = `{"name": "app", "version": "1.0.0", "dependencies": {"greet": "1.2.0", "no-such-package": "2.0.0"}}` + "\n"
			s = e.check(t, "javascript", js)
			t.Logf("missing package: %s\n%s", s.Deps, s.Output)
			if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "no-such-package") ||
				!strings.HasPrefix(s.Output, "installing the dependencies (npm install") {
				t.Errorf("a missing package: passed=%v stage=%q output, which should name npm's command and show its message:\n%s", s.Passed, s.Stage, s.Output)
			}
		})
	}
}

// TestCheckEvictsInstallsUsedLeast: past the installs' size limit a new
// install evicts those used least recently, but never one used within the
// last hour (a check may be running over it): an evicted install is made
// again on its next check, a kept one stays cached.
func TestCheckEvictsInstallsUsedLeast(t *testing.T) {
	name, whl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hi'\n")
	index := registrytest.NewPyIndex(t, map[string][]byte{name: whl})
	e := newDepsEnv(t, "bwrap", []string{index.Host()}, map[string]string{"python": index.URL()})
	e.acts.DepsMaxSize = 1 // any install is past it
	project := func(comment string) map[string]string {
		return map[string]string{
			"requirements.txt": "# " + comment + "\ngreetlib==1.0\n",
			"test_greet.py":    "import greetlib\n\n\ndef test_hello():\n    assert greetlib.hello() == 'hi'\n",
		}
	}
	checkDeps := func(p map[string]string, want string) {
		t.Helper()
		s := e.check(t, "python", p)
		if !s.Passed || !strings.Contains(s.Deps, want) {
			t.Fatalf("check: passed %v, deps %q (want %q): %s", s.Passed, s.Deps, want, s.Output)
		}
	}
	checkDeps(project("old"), "installed in")
	old, err := filepath.Glob(filepath.Join(e.acts.DepsDir, "python-*"))
	if err != nil || len(old) != 1 {
		t.Fatalf("installs after the first check: %v %v", old, err)
	}
	// Used two hours ago.
	then := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(old[0], then, then); err != nil {
		t.Fatal(err)
	}
	checkDeps(project("new"), "installed in")
	// Eviction runs in the background, after the check.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := os.Stat(old[0])
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the install used two hours ago is still there past the limit (%v)", err)
		}
	}
	// The new one was used in the last hour: kept although over the limit.
	checkDeps(project("new"), "cached")
	checkDeps(project("old"), "installed in")
	if n := index.Downloads(); n != 3 {
		t.Errorf("wheel downloads: %d, want 3 (old, new, old again)", n)
	}
}

// TestCheckInstallsPyprojectDeps: a project with no requirements.txt whose
// pyproject.toml declares a package in [project] dependencies and another
// in a test dependency group has both installed before its tests, and
// never the project itself (its own extra names it); on both backends.
func TestCheckInstallsPyprojectDeps(t *testing.T) {
	greet, greetWhl := registrytest.PureWheel(t, "greetlib", "1.0", "def hello():\n    return 'hi'\n")
	check, checkWhl := registrytest.PureWheel(t, "checklib", "2.0", "def ok():\n    return True\n")
	index := registrytest.NewPyIndex(t, map[string][]byte{greet: greetWhl, check: checkWhl})
	project := map[string]string{
		"pyproject.toml": `[project]
name = "demo"
version = "0.1"
dependencies = ["greetlib==1.0"]

[dependency-groups]
test = ["checklib>=2", "demo[extra]"]
`,
		"test_demo.py": "import checklib\nimport greetlib\n\n\ndef test_both():\n    assert greetlib.hello() == 'hi' and checklib.ok()\n",
	}
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) {
			e := newDepsEnv(t, backend, []string{index.Host()}, map[string]string{"python": index.URL()})
			s := e.check(t, "python", project)
			if !s.Passed || !strings.Contains(s.Deps, "installed in") {
				t.Fatalf("check: passed %v, deps %q, stage %s: %s", s.Passed, s.Deps, s.Stage, s.Output)
			}
		})
	}
}

// TestCheckInstallsCrates: on both backends (Debian's cargo, in the
// offline image and on this machine), a Rust project whose Cargo.toml
// names a crate of a sparse registry the test serves (a private registry,
// and cargo's index), which depends on another, has both vendored
// through the egress proxy before its tests, which use them offline; a
// second check with the same manifest reuses the install without a
// download; the tests themselves cannot reach the registry. A path
// dependency's Cargo.toml is read by the install. A worker whose installs
// are off fails the check and says so. A crate the registry lacks is a
// failed check at stage install with cargo's message.
func TestCheckInstallsCrates(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) {
			reg := registrytest.NewCargoRegistry(t,
				registrytest.Crate{Name: "shoutcrate", Version: "0.2.1", Lib: "pub fn shout(s: &str) -> String { s.to_uppercase() }\n"},
				registrytest.Crate{Name: "greetcrate", Version: "1.0.0", Deps: map[string]string{"shoutcrate": "^0.2"},
					Lib: "pub fn hello() -> String { shoutcrate::shout(\"hello from greetcrate\") }\n"})
			e := newDepsEnv(t, backend, []string{reg.Host()}, map[string]string{"rust": reg.URL()})
			project := map[string]string{
				"Cargo.toml": "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ngreetcrate = \"1.0\"\n",
				"src/lib.rs": fmt.Sprintf(`pub fn greeting() -> String {
    greetcrate::hello()
}

#[cfg(test)]
mod tests {
    #[test]
    fn greets() {
        assert_eq!(super::greeting(), "HELLO FROM GREETCRATE");
    }

    #[test]
    fn no_network() {
        let addr: std::net::SocketAddr = %q.parse().unwrap();
        let reached = std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(3)).is_ok();
        assert!(!reached, "the test run reached the registry");
    }
}
`, reg.Host()),
			}
			s := e.check(t, "rust", project)
			t.Logf("first check: %s\n%s", s.Deps, s.Output)
			if !s.Passed || !strings.Contains(s.Deps, "installed in") {
				t.Fatalf("first check: passed=%v stage %s, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
			}
			for _, want := range []string{"tests::greets ... ok", "tests::no_network ... ok"} {
				if !strings.Contains(s.Output, want) {
					t.Errorf("the first check's output lacks %q:\n%s", want, s.Output)
				}
			}
			if n := reg.Downloads(); n != 2 {
				t.Errorf("crate downloads after the first check: %d, want 2", n)
			}

			s = e.check(t, "rust", project)
			if !s.Passed || !strings.Contains(s.Deps, "dependencies: cached") || reg.Downloads() != 2 {
				t.Errorf("second check: passed=%v, deps %q, %d downloads in all (want 2: the install is cached):\n%s", s.Passed, s.Deps, reg.Downloads(), s.Output)
			}

			// A package of the project's own, a path dependency: the install
			// reads its Cargo.toml, and vendors only what is remote.
			local := maps.Clone(project)
			local["Cargo.toml"] += "loud = { path = \"loud\" }\n"
			local["loud/Cargo.toml"] = "[package]\nname = \"loud\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"
			local["loud/src/lib.rs"] = "pub fn loud() -> String { String::from(\"LOUD\") }\n"
			local["tests/loud.rs"] = "#[test]\nfn loud_and_greeting() {\n    assert_eq!(loud::loud() + \" \" + &app::greeting(), \"LOUD HELLO FROM GREETCRATE\");\n}\n"
			s = e.check(t, "rust", local)
			if !s.Passed || !strings.Contains(s.Deps, "installed in") || !strings.Contains(s.Output, "loud_and_greeting ... ok") {
				t.Errorf("a path dependency: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
			}

			// A workspace whose members are a glob: the install reads each
			// member's Cargo.toml, and the members' path dependencies.
			ws := map[string]string{
				"Cargo.toml":             "[workspace]\nmembers = [\"crates/*\"]\n",
				"crates/app/Cargo.toml":  "[package]\nname = \"wsapp\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\ngreetcrate = \"1.0\"\nwsutil = { path = \"../util\" }\n",
				"crates/app/src/lib.rs":  "#[test]\nfn member_greets() {\n    assert_eq!(wsutil::twice(&greetcrate::hello()), \"HELLO FROM GREETCRATE HELLO FROM GREETCRATE\");\n}\n",
				"crates/util/Cargo.toml": "[package]\nname = \"wsutil\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
				"crates/util/src/lib.rs": "pub fn twice(s: &str) -> String { format!(\"{s} {s}\") }\n",
			}
			s = e.check(t, "rust", ws)
			if !s.Passed || !strings.Contains(s.Output, "member_greets ... ok") {
				t.Errorf("a workspace of glob members: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
			}

			routes := e.acts.Egress
			e.acts.Egress = nil
			s = e.check(t, "rust", project)
			if s.Passed || s.Stage != "install" || !strings.Contains(s.Deps, "installs are off") {
				t.Errorf("installs off: passed=%v stage %q, deps %q:\n%s", s.Passed, s.Stage, s.Deps, s.Output)
			}
			e.acts.Egress = routes

			project["Cargo.toml"] += "nosuchcrate = \"2.0\"\n"
			s = e.check(t, "rust", project)
			t.Logf("missing crate: %s\n%s", s.Deps, s.Output)
			if s.Passed || s.Stage != "install" || !strings.Contains(s.Output, "nosuchcrate") ||
				!strings.HasPrefix(s.Output, "installing the dependencies (cargo vendor") {
				t.Errorf("a missing crate: passed=%v stage=%q output, which should name cargo's command and show its message:\n%s", s.Passed, s.Stage, s.Output)
			}
		})
	}
}
