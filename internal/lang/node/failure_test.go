package node

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
)

// The outputs in testdata are real: node 20 on a host, node 18, jest 29.3
// and tsc 4.8 in Debian bookworm's packages.

func TestParse(t *testing.T) {
	langtest.CheckParses(t, parse, []langtest.ParseCase{
		{File: "tap-assert-node20.txt", Kind: "node:test-fail", Shape: "Expected values to be strictly equal: <n> !== <n>", Keys: []string{"not ok 1 - total sums quantities times price"}},
		{File: "tap-assert-node18.txt", Kind: "node:test-fail", Shape: "Expected values to be strictly equal: <n> !== <n>", Keys: []string{"not ok 1 - total sums quantities times price"}},
		{File: "tap-describe-node18.txt", Kind: "node:test-fail", Shape: "Expected values to be strictly equal: <n> !== <n>", Keys: []string{"not ok 1 - pops the last pushed"}},
		{File: "tap-describe-node20.txt", Kind: "node:test-fail", Shape: "Expected values to be strictly equal: <n> !== <n>", Keys: []string{"not ok 1 - pops the last pushed"}},
		{File: "spec-describe-node20.txt", Kind: "node:test-fail", Shape: "Expected values to be strictly equal: <n> !== <n>", Keys: []string{"✖ pops the last pushed (7.675305ms)"}},
		{File: "tap-typeerror-node20.txt", Kind: "javascript:TypeError", Shape: "cfg.load is not a function", Keys: []string{"not ok 1 - main returns the port"}},
		{File: "tap-syntax-node20.txt", Kind: "javascript:SyntaxError", Shape: "missing ) after argument list", Keys: []string{"SyntaxError: missing ) after argument list"}},
		{File: "tap-syntax-node18.txt", Kind: "javascript:SyntaxError", Shape: "missing ) after argument list", Keys: []string{"SyntaxError: missing ) after argument list"}},
		{File: "crash-typeerror-node20.txt", Kind: "javascript:TypeError", Shape: "cfg.load is not a function", Keys: []string{"TypeError: cfg.load is not a function"}},
		{File: "jest-assert.txt", Kind: "jest:test-fail", Shape: "expect(received).toBe(expected) // Object.is equality", Keys: []string{"● cart › total sums quantities times price"}},
		{File: "jest-typeerror-syntax.txt", Kind: "javascript:TypeError", Shape: "cfg.load is not a function", Keys: []string{"● main returns the port"}},
		{File: "tsc-errors.txt", Kind: "typescript:TS2322", Shape: "Type <id> is not assignable to type <id>.", Keys: []string{"src/money.ts(3,9): error TS2322: Type 'number' is not assignable to type 'string'."}},
	})
}

func TestParseKeepsWhereItFailed(t *testing.T) {
	tests := []struct {
		file string
		keys []string
	}{
		{"tap-assert-node18.txt", []string{"/w/js1/cart.test.js:5:1", "expected: 11", "actual: 7", "TestContext.<anonymous> (/w/js1/cart.test.js:6:10)"}},
		{"tap-syntax-node18.txt", []string{"/w/syntax/util.js:2", "at Object.<anonymous> (/w/syntax/util.test.js:3:18)"}},
		{"crash-typeerror-node20.txt", []string{"/tmp/nodework/crash/app.js:2", "at main (/tmp/nodework/crash/app.js:2:30)"}},
		{"jest-assert.txt", []string{"Expected: 11", "Received: 7", "at Object.<anonymous> (cart.test.js:5:65)"}},
	}
	for _, tt := range tests {
		f := parse(strings.Split(langtest.Output(t, tt.file), "\n"))
		for _, k := range tt.keys {
			if !slices.Contains(f.Keys, k) {
				t.Errorf("%s: keys %q lack %q", tt.file, f.Keys, k)
			}
		}
	}
}

func TestParseUnknownOutput(t *testing.T) {
	if f := parse([]string{"all good", "done"}); f.Kind != "" {
		t.Errorf("parse = %+v; want nothing", f)
	}
}

func TestFailing(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"tap-assert-node20.txt", []string{"total sums quantities times price", "discount takes a percentage"}},
		{"tap-describe-node18.txt", []string{"pops the last pushed", "deep equal", "Stack"}},
		{"spec-describe-node20.txt", []string{"pops the last pushed", "deep equal", "Stack"}},
		{"jest-assert.txt", []string{"cart › total sums quantities times price", "cart › discount takes a percentage"}},
		// The file that failed to run is no test.
		{"jest-typeerror-syntax.txt", []string{"main returns the port"}},
		{"tsc-errors.txt", nil},
		{"tap-syntax-node20.txt", nil},
		{"tap-mixed-node20.txt", []string{"total sums quantities times price", "discount takes a percentage", "reads the port"}},
	}
	for _, tt := range tests {
		if got := langtest.Failing(failure.Failing, langtest.Output(t, tt.file)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: failing = %q; want %q", tt.file, got, tt.want)
		}
	}
}

func TestDigest(t *testing.T) {
	langtest.CheckDigests(t, digest, 0, []langtest.DigestCase{
		{File: "tap-assert-node20.txt",
			Want: []string{"not ok 2 - discount takes a percentage", "-1800 !== 180", "actual: -1800", "(/tmp/nodework/js1/cart.test.js:10:10)", "# fail 2"},
			Not:  []string{"node:internal", "duration_ms"}},
		{File: "tap-describe-node18.txt",
			Want: []string{"not ok 3 - deep equal", "Expected values to be strictly deep-equal:", "stack.test.js:7:35"},
			Not:  []string{"not ok 2 - Stack", "subtest"}},
		{File: "spec-describe-node20.txt",
			Want: []string{"✖ pops the last pushed", "1 !== 2", "stack.test.js:5:90", "ℹ fail 2"},
			Not:  []string{"✖ Stack", "node:internal", "failing tests:"}},
		{File: "tap-syntax-node20.txt",
			Want: []string{"SyntaxError: missing ) after argument list", "/tmp/nodework/syntax/util.js:2"},
			Not:  []string{"node:internal"}},
		// Failing tests, a test whose error is thrown inside Node, and a
		// file that does not parse, in one run.
		{File: "tap-mixed-node20.txt",
			Want: []string{"not ok 1 - total sums quantities times price", "not ok 4 - reads the port",
				"parseConfig (/tmp/nodework/mixed/config.js:2:15)", "SyntaxError: missing ) after argument list", "/tmp/nodework/mixed/util.js:2"},
			Not: []string{"JSON.parse (<anonymous>)", "node:internal"}},
		{File: "jest-typeerror-syntax.txt",
			Want: []string{"● main returns the port", "TypeError: cfg.load is not a function", "at main (app.js:2:30)",
				"● Test suite failed to run", `SyntaxError: /w/jest2/util.js: Unexpected token, expected "," (2:44)`, "Tests:       1 failed, 1 total"},
			Not: []string{"usr/share/nodejs", "648 |"}},
		{File: "tsc-errors.txt",
			Want: []string{"src/money.ts(6,53): error TS2551: Property 'currenc' does not exist on type 'Price'."},
		},
	})
	if d := digest("all good\n"); d != "" {
		t.Errorf("digest of an output without failures = %q; want empty", d)
	}
}
