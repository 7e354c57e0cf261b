package rust

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
)

// The testdata are real outputs of cargo 1.95 (rustup) and of Debian's
// cargo with rustc 1.63, the two panic formats among them, over the same
// small crates.

func TestParse(t *testing.T) {
	langtest.CheckParses(t, Parse, []langtest.ParseCase{
		{File: "compile-1.95.txt", Kind: "rust:E0425", Shape: "cannot find value <id> in this scope",
			Keys: []string{"error[E0425]: cannot find value `c` in this scope", "src/lib.rs:3:9", "error[E0308]: mismatched types"}},
		{File: "compile-1.63.txt", Kind: "rust:E0425", Shape: "cannot find value <id> in this scope",
			Keys: []string{"error[E0425]: cannot find value `c` in this scope", "src/lib.rs:3:9", "error[E0308]: mismatched types"}},
		{File: "testcompile-1.95.txt", Kind: "rust:E0308", Shape: "mismatched types",
			Keys: []string{"error[E0308]: mismatched types", "src/lib.rs:8:27"}},
		{File: "testcompile-1.63.txt", Kind: "rust:E0308", Shape: "mismatched types",
			Keys: []string{"error[E0308]: mismatched types", "src/lib.rs:8:27"}},
		{File: "testfail-1.95.txt", Kind: "rust:test-fail", Shape: "assertion <str> failed",
			Keys: []string{"assertion `left == right` failed", "thread 'tests::it_adds' (25392) panicked at src/lib.rs:15:9:", "left: 0", "right: 4", "parse gave 12"}},
		// The old wording reads as today's: one lesson for both.
		{File: "testfail-1.63.txt", Kind: "rust:test-fail", Shape: "assertion <str> failed",
			Keys: []string{"assertion `left == right` failed", "thread 'tests::it_adds' panicked at src/lib.rs:15:9:", "left: `0`,", "right: `4`", "parse gave 12"}},
		{File: "panic-1.95.txt", Kind: "rust:panic:index-out-of-bounds", Shape: "index out of bounds: the len is <n> but the index is <n>",
			Keys: []string{"index out of bounds: the len is 0 but the index is 3", "thread 'main' (25464) panicked at src/main.rs:3:21:"}},
		{File: "panic-1.63.txt", Kind: "rust:panic:index-out-of-bounds", Shape: "index out of bounds: the len is <n> but the index is <n>",
			Keys: []string{"index out of bounds: the len is 0 but the index is 3", "thread 'main' panicked at src/main.rs:3:20:"}},
		// A doc test runs as its own program, in its thread main.
		{File: "doctest-1.95.txt", Kind: "rust:test-fail", Shape: "assertion <str> failed",
			Keys: []string{"assertion `left == right` failed", "thread 'main' (29775) panicked at src/lib.rs:5:1:", "left: 1", "right: 2"}},
		{File: "doctest-1.63.txt", Kind: "rust:test-fail", Shape: "assertion <str> failed",
			Keys: []string{"assertion `left == right` failed"}},
		{File: "link-1.95.txt", Kind: "rust:link", Shape: "undefined symbol: no_such_symbol_anywhere",
			Keys: []string{"error: linking with `cc` failed: exit status: 1"}},
		{File: "link-1.63.txt", Kind: "rust:link", Shape: "undefined reference to <id>",
			Keys: []string{"error: linking with `cc` failed: exit status: 1", "/work/link/src/main.rs:5: undefined reference to `no_such_symbol_anywhere'"}},
		{File: "lockfile-1.63.txt", Kind: "rust:lockfile", Shape: "failed to parse lock file at: <path>",
			Keys: []string{"error: failed to parse lock file at: /work/compile/Cargo.lock"}},
	})
}

// TestParseOrder: libtest reports a binary's failing tests as they end,
// which differs from run to run; the reading does not. The unit tests
// still come before the integration tests, as cargo runs them.
func TestParseOrder(t *testing.T) {
	out, err := os.ReadFile("testdata/testfail-1.95.txt")
	if err != nil {
		t.Fatal(err)
	}
	adds := "---- tests::it_adds stdout ----\n\nthread 'tests::it_adds' (25392) panicked at src/lib.rs:15:9:\nassertion `left == right` failed\n  left: 0\n right: 4\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n"
	unwraps := "---- tests::it_unwraps stdout ----\n\nthread 'tests::it_unwraps' (25403) panicked at src/lib.rs:6:15:\ncalled `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }\n\n"
	text := string(out)
	if !strings.Contains(text, adds) || !strings.Contains(text, unwraps) {
		t.Fatal("the testdata no longer holds the sections this test swaps")
	}
	swapped := strings.Replace(strings.Replace(text, adds, "\x00", 1), unwraps, adds, 1)
	swapped = strings.Replace(swapped, "\x00", unwraps, 1)
	want, got := Parse(strings.Split(text, "\n")), Parse(strings.Split(swapped, "\n"))
	if !slices.Equal(got.Keys, want.Keys) || got.Kind != want.Kind || got.Shape != want.Shape {
		t.Errorf("the same failures in another order read differently:\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(want.Keys[1], "tests::it_adds") {
		t.Errorf("first failure = %q, want the unit test it_adds (the first by name, before the integration tests)", want.Keys[1])
	}
}

// TestParseClasses: panics are classed by their message, in a test or
// not; a failed assertion is a test's failure, a plain panic elsewhere is
// a panic; warnings and cargo's own summaries are no findings.
func TestParseClasses(t *testing.T) {
	tests := []struct {
		name, out, kind string
	}{
		{"unwrap on None", "---- tests::t stdout ----\n\nthread 'tests::t' (7) panicked at src/lib.rs:4:9:\ncalled `Option::unwrap()` on a `None` value\n", "rust:panic:unwrap-none"},
		{"unwrap on Err", "thread 'main' panicked at 'called `Result::unwrap()` on an `Err` value: Os { code: 2 }', src/main.rs:2:5\n", "rust:panic:unwrap-err"},
		{"overflow", "thread 't' panicked at src/lib.rs:2:5:\nattempt to add with overflow\n", "rust:panic:overflow"},
		{"divide by zero", "thread 'main' panicked at src/main.rs:2:5:\nattempt to divide by zero\n", "rust:panic:divide-by-zero"},
		{"todo", "thread 'tests::t' panicked at src/lib.rs:2:5:\nnot yet implemented\n", "rust:panic:todo"},
		{"panic outside a test", "thread 'main' panicked at src/main.rs:2:5:\nbad config\n", "rust:panic"},
		{"a test that prints an error", "---- tests::t stdout ----\nerror: connection refused\n\nthread 'tests::t' panicked at src/lib.rs:9:5:\nassertion failed: ok\n", "rust:test-fail"},
		{"doc test summary only", "error: doctest failed, to rerun pass `--doc`\n", ""},
		{"stack overflow", "\nthread 'tests::deep' has overflowed its stack\nfatal runtime error: stack overflow\nerror: test failed, to rerun pass `--lib`\n", "rust:stack-overflow"},
		{"signal", "error: test failed, to rerun pass `--lib`\n\nCaused by:\n  process didn't exit successfully: `/tmp/target/debug/deps/calc-1` (signal: 11, SIGSEGV: invalid memory reference)\n", "rust:crash"},
		{"test that returned Err", "---- tests::reads stdout ----\nError: \"no such key\"\n\nfailures:\n    tests::reads\n\ntest result: FAILED. 0 passed; 1 failed\n", "rust:test-fail"},
		{"no error code", "error: expected one of `.`, `;`, `?`, `}`, or an operator, found `x`\n --> src/lib.rs:2:7\n", "rust:compile"},
		{"dependency offline", "error: no matching package named `rand` found\n", "rust:dependency"},
		{"warnings only", "warning: unused variable: `x`\n --> src/lib.rs:2:9\n\nwarning: build failed, waiting for other jobs to finish...\nerror: could not compile `calc` due to previous error\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Parse(strings.Split(tt.out, "\n")).Kind; got != tt.kind {
				t.Errorf("kind = %q, want %q", got, tt.kind)
			}
		})
	}
}

// TestDigest: each failing test with its own panic and values, each
// compiler error with its location; no backtrace notes, no linker
// command line.
func TestDigest(t *testing.T) {
	langtest.CheckDigests(t, Digest, 0, []langtest.DigestCase{
		{File: "testfail-1.95.txt", Want: []string{
			"---- tests::it_adds stdout ----\nthread 'tests::it_adds' (25392) panicked at src/lib.rs:15:9:\nassertion `left == right` failed\n  left: 0\n right: 4",
			"---- tests::it_parses stdout ----\nthread 'tests::it_parses' (25394) panicked at src/lib.rs:25:9:\nparse gave 12",
			"---- adds_negative stdout ----\nthread 'adds_negative' (25405) panicked at tests/api.rs:5:5:\nassertion `left == right` failed\n  left: 0\n right: -2",
			"test result: FAILED. 0 passed; 1 failed",
		}, Not: []string{"RUST_BACKTRACE", "running 4 tests", "Doc-tests"}},
		{File: "testfail-1.63.txt", Want: []string{
			"---- tests::it_adds stdout ----\nthread 'tests::it_adds' panicked at src/lib.rs:15:9:\nassertion failed: `(left == right)`\n  left: `0`,\n right: `4`",
			"thread 'tests::it_unwraps' panicked at src/lib.rs:6:15:\ncalled `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }",
		}, Not: []string{"RUST_BACKTRACE"}},
		{File: "compile-1.95.txt", Want: []string{
			"error[E0425]: cannot find value `c` in this scope\n --> src/lib.rs:3:9",
			"error[E0308]: mismatched types\n --> src/lib.rs:8:5",
			"^ expected `i32`, found `String`",
		}, Not: []string{"could not compile", "rustc --explain"}},
		{File: "link-1.63.txt", Want: []string{
			"error: linking with `cc` failed: exit status: 1\n          /work/link/src/main.rs:5: undefined reference to `no_such_symbol_anywhere'",
		}, Not: []string{"-Wl,--as-needed"}},
		{File: "panic-1.63.txt", Want: []string{"thread 'main' panicked at src/main.rs:3:20:\nindex out of bounds: the len is 0 but the index is 3"}},
	})
	var many strings.Builder
	for i := range 40 {
		fmt.Fprintf(&many, "---- tests::t%d stdout ----\nthread 'tests::t%d' panicked at src/lib.rs:%d:5:\nassertion `left == right` failed\n  left: %q\n right: \"b\"\n\n", i, i, i, strings.Repeat("a", 100))
	}
	many.WriteString("failures:\n\ntest result: FAILED. 0 passed; 40 failed\n")
	if d := Digest(many.String()); len(d) > 3000 || !strings.Contains(d, "---- tests::t0 stdout ----") || !strings.HasSuffix(d, "test result: FAILED. 0 passed; 40 failed") {
		t.Errorf("digest of 40 failures (%d bytes) is not the first ones and the result within 3000 bytes:\n%s", len(d), d)
	}
	if d := Digest("   Compiling calc v0.1.0\n    Finished test\nrunning 1 test\ntest t ... ok\n"); d != "" {
		t.Errorf("digest of a passing run = %q, want empty", d)
	}
}

func TestFailing(t *testing.T) {
	tests := map[string][]string{
		"testfail-1.95.txt": {"tests::it_adds", "tests::it_parses", "tests::it_unwraps", "adds_negative"},
		"testfail-1.63.txt": {"tests::it_adds", "tests::it_parses", "tests::it_unwraps", "adds_negative"},
		"doctest-1.95.txt":  {"src/lib.rs - add (line 3)"},
		"doctest-1.63.txt":  {"src/lib.rs - add (line 3)"},
	}
	for file, want := range tests {
		out := langtest.Output(t, file)
		for _, re := range Language().Failure.Failing {
			got := langtest.Failing([]*regexp.Regexp{re}, out)
			slices.Sort(got)
			if w := slices.Sorted(slices.Values(want)); !slices.Equal(got, w) {
				t.Errorf("%s: %v finds %q, want %q", file, re, got, w)
			}
		}
	}
}
