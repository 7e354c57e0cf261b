package node_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/lang/node"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// The fixes of the examples' bugs: what a model that solves them writes.
var (
	invoiceFix   = langtest.Fix{Path: "src/invoice.js", Old: "cents - cents * percent", New: "cents * (1 - percent / 100)"}
	inventoryFix = langtest.Fix{Path: "src/inventory.ts", Old: "if (have < 0)", New: "if (have < qty)"}
)

// example is one of the repository's examples, as the sandbox runs it.
type example struct {
	lang lang.Language
	dir  string
	fix  langtest.Fix
	// kind is the failure's kind; failing a test the bug fails, passing
	// one it does not.
	kind, failing, passing string
	// broken is a file that does not compile, and brokenKind its kind.
	broken     workspace.File
	brokenKind string
}

var examples = []example{
	{
		lang: node.JavaScript(), dir: "javascript", fix: invoiceFix,
		kind: "node:test-fail", failing: "applies a discount in percent", passing: "sums line items",
		broken:     workspace.File{Path: "src/format.js", Data: []byte("function formatCents(c) {\n  return (c / 100;\n}\n")},
		brokenKind: "javascript:SyntaxError",
	},
	{
		lang: node.TypeScript(), dir: "typescript", fix: inventoryFix,
		kind: "node:test-fail", failing: "refuses to remove more than it has", passing: "counts what was added and removed",
		broken:     workspace.File{Path: "src/util.ts", Data: []byte("export const half: number = \"one half\";\n")},
		brokenKind: "typescript:TS2322",
	},
}

// TestExamples runs each example's tests as a task does, on each backend:
// its bug fails them and the failure is read, a named test runs alone,
// the compile check tells code that builds from code that does not, and
// the fix passes.
func TestExamples(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) {
			r := newRunner(t, backend)
			for _, ex := range examples {
				t.Run(ex.lang.Name, func(t *testing.T) { ex.check(t, r) })
			}
		})
	}
}

func (ex example) check(t *testing.T, r sandbox.Runner) {
	files := langtest.Example(t, ex.dir)

	out := ex.run(t, r, files, nil, false)
	if f := ex.lang.Failure.Parse(strings.Split(out, "\n")); f.Kind != ex.kind {
		t.Errorf("failure kind = %q (%+v); want %q", f.Kind, f, ex.kind)
	}
	if names := langtest.Failing(ex.lang.Failure.Failing, out); !slices.Contains(names, ex.failing) {
		t.Errorf("failing tests = %q; want %q among them", names, ex.failing)
	}
	if d := ex.lang.Failure.Digest(out); !strings.Contains(d, ex.failing) {
		t.Errorf("digest lacks %q:\n%s", ex.failing, d)
	}

	named, err := ex.lang.Tests.Named([]string{ex.failing})
	if err != nil {
		t.Fatal(err)
	}
	out = ex.run(t, r, files, named, false)
	if strings.Contains(out, "ok 1 - "+ex.passing+"\n") || !strings.Contains(out, ex.failing) {
		t.Errorf("the named test did not run alone:\n%s", out)
	}

	ex.run(t, r, files, ex.lang.Tests.Compile, true)
	out = ex.run(t, r, langtest.WithFile(files, ex.broken), ex.lang.Tests.Compile, false)
	if f := ex.lang.Failure.Parse(strings.Split(out, "\n")); f.Kind != ex.brokenKind {
		t.Errorf("compile failure kind = %q (%+v); want %q", f.Kind, f, ex.brokenKind)
	}

	fixed := langtest.Apply(t, files, ex.fix)
	ex.run(t, r, fixed, nil, true)
	ex.run(t, r, fixed, named, true)
	// A name that matches no test passes nothing.
	none, _ := ex.lang.Tests.Named([]string{"no such test"})
	ex.run(t, r, fixed, none, false)
}

// run runs cmd (nil: the default test command) over files and wants it to
// pass or fail; it returns the output.
func (ex example) run(t *testing.T, r sandbox.Runner, files []workspace.File, cmd []string, pass bool) string {
	t.Helper()
	res, out := langtest.Run(t, r, sandbox.Spec{Profile: ex.lang.Name, Files: files, Cmd: cmd})
	if (res.ExitCode == 0) != pass {
		t.Fatalf("run %q: exit %d, want passing=%v:\n%s", cmd, res.ExitCode, pass, out)
	}
	return out
}

// newRunner is a runner of backend serving both languages.
func newRunner(t *testing.T, backend string) sandbox.Runner {
	return langtest.Runner(t, backend, node.JavaScript(), node.TypeScript())
}

// TestJestStyle runs a project of Jest-style tests (globals, no imports,
// no package.json): with jest where the image has it, and on a host
// without jest by node --test, where the missing globals say what is
// wrong.
func TestJestStyle(t *testing.T) {
	files := []workspace.File{
		{Path: "cart.js", Data: []byte("exports.discount = (cents, pct) => cents - cents * pct;\nexports.total = (items) => items.reduce((s, i) => s + i.price, 0);\n")},
		{Path: "cart.test.js", Data: []byte(`const { discount, total } = require('./cart');
describe('cart', () => {
  it('takes a discount in percent', () => { expect(discount(200, 10)).toBe(180); });
  it('totals prices', () => { expect(total([{ price: 2 }, { price: 3 }])).toBe(5); });
});
`)},
	}
	js := example{lang: node.JavaScript()}
	for _, tt := range []struct{ backend, kind string }{
		{"docker", "jest:test-fail"},
		{"bwrap", "javascript:ReferenceError"},
	} {
		t.Run(tt.backend, func(t *testing.T) {
			r := newRunner(t, tt.backend)
			out := js.run(t, r, files, nil, false)
			if f := js.lang.Failure.Parse(strings.Split(out, "\n")); f.Kind != tt.kind {
				t.Errorf("failure kind = %q (%+v); want %q\n%s", f.Kind, f, tt.kind, out)
			}
			if tt.backend != "docker" {
				return
			}
			if names := langtest.Failing(js.lang.Failure.Failing, out); !slices.Equal(names, []string{"cart › takes a discount in percent"}) {
				t.Errorf("failing tests = %q", names)
			}
			named, _ := js.lang.Tests.Named([]string{"cart › totals prices"})
			if out := js.run(t, r, files, named, true); !strings.Contains(out, "1 skipped") {
				t.Errorf("the named test did not run alone:\n%s", out)
			}
			none, _ := js.lang.Tests.Named([]string{"no such test"})
			js.run(t, r, files, none, false)
		})
	}
}

// TestTypeScriptFailureNamesSource checks that a compiled test's failure
// points at the TypeScript source, not at the build directory.
func TestTypeScriptFailureNamesSource(t *testing.T) {
	ts := example{lang: node.TypeScript()}
	out := ts.run(t, newRunner(t, "bwrap"), langtest.Example(t, "typescript"), nil, false)
	if d := ts.lang.Failure.Digest(out); !strings.Contains(d, "/work/src/inventory.test.ts:") {
		t.Errorf("digest does not name the .ts source:\n%s", d)
	}
}

// TestOwnTestScript runs the project's own test script when package.json
// has one, but for npm's placeholder: without npm, unless the script has a
// pretest step or reads npm's variables.
func TestOwnTestScript(t *testing.T) {
	r := newRunner(t, "bwrap")
	js := example{lang: node.JavaScript()}
	own := []workspace.File{
		{Path: "package.json", Data: []byte(`{"name": "own", "scripts": {"test": "node checks.js"}}`)},
		{Path: "checks.js", Data: []byte("console.log('own checks ran', process.env.npm_lifecycle_event || 'without npm'); process.exit(3);\n")},
		{Path: "a.test.js", Data: []byte("require('node:test')('passes', () => {});\n")},
	}
	if out := js.run(t, r, own, nil, false); !strings.Contains(out, "own checks ran without npm") {
		t.Errorf("the project's test script did not run, or ran through npm:\n%s", out)
	}
	// A pretest step, or npm's variables: through npm, which has them.
	for scripts, want := range map[string]string{
		`{"pretest": "node -e \"console.log('pretest ran')\"", "test": "node checks.js"}`: "pretest ran",
		`{"test": "echo the package is $npm_package_name && node checks.js"}`:             "the package is own",
	} {
		withNpm := langtest.WithFile(own, workspace.File{Path: "package.json", Data: []byte(`{"name": "own", "scripts": ` + scripts + `}`)})
		if out := js.run(t, r, withNpm, nil, false); !strings.Contains(out, want) || !strings.Contains(out, "own checks ran test") {
			t.Errorf("%s did not run through npm:\n%s", scripts, out)
		}
	}
	// A project .npmrc: npm reads it (here its node-options).
	npmrc := langtest.WithFile(own, workspace.File{Path: ".npmrc", Data: []byte("node-options=--no-warnings\n")})
	npmrc = langtest.WithFile(npmrc, workspace.File{Path: "checks.js", Data: []byte("console.log('own checks ran', process.env.npm_lifecycle_event || 'without npm', process.env.NODE_OPTIONS); process.exit(3);\n")})
	if out := js.run(t, r, npmrc, nil, false); !strings.Contains(out, "own checks ran test --no-warnings") {
		t.Errorf("with a project .npmrc, the script did not run through npm with its node-options:\n%s", out)
	}
	placeholder := langtest.WithFile(own, workspace.File{Path: "package.json",
		Data: []byte(`{"name": "own", "scripts": {"test": "echo \"Error: no test specified\" && exit 1"}}`)})
	if out := js.run(t, r, placeholder, nil, true); !strings.Contains(out, "ok 1 - passes") {
		t.Errorf("node --test did not run the tests:\n%s", out)
	}
}

// TestPrewarm runs each language's warm-up as a pool's first sandbox does.
func TestPrewarm(t *testing.T) {
	r := newRunner(t, "bwrap")
	for _, l := range []lang.Language{node.JavaScript(), node.TypeScript()} {
		example{lang: l}.run(t, r, nil, []string{"sh", "-c", l.Sandbox.Prewarm}, true)
	}
}

// TestTypeScriptTestsRunFromTheRoot runs compiled tests in the project's
// root, where their data files are.
func TestTypeScriptTestsRunFromTheRoot(t *testing.T) {
	files := []workspace.File{
		{Path: "tsconfig.json", Data: []byte(`{"compilerOptions": {"target": "ES2020", "module": "commonjs", "strict": true, "esModuleInterop": true}}`)},
		{Path: "testdata/prices.json", Data: []byte(`[1, 2, 3]`)},
		{Path: "src/prices.test.ts", Data: []byte(`import test from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
test("reads its data from the root", () => {
  assert.deepEqual(JSON.parse(readFileSync("testdata/prices.json", "utf8")), [1, 2, 3]);
});
`)},
	}
	ts := example{lang: node.TypeScript()}
	r := newRunner(t, "bwrap")
	ts.run(t, r, files, nil, true)
	named, _ := ts.lang.Tests.Named([]string{"reads its data from the root"})
	ts.run(t, r, files, named, true)
}
