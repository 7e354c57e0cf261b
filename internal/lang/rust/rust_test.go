package rust_test

import (
	"slices"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/lang/rust"
)

// TestDetect: a cargo project, a cargo test command and a task that asks
// for Rust are Rust's; "rs" names it.
func TestDetect(t *testing.T) {
	for _, c := range []langtest.DetectCase{
		{Name: "manifest", Root: []string{"Cargo.toml", "src"}, Want: "rust"},
		{Name: "test command", TestCmd: "cargo test --release", Want: "rust"},
		{Name: "task", Task: "Write a Rust library that parses durations", Want: "rust"},
		{Name: "task names cargo", Task: "make the cargo workspace build", Want: "rust"},
	} {
		d := languages.Detect(c.Root, c.TestCmd, c.Task)
		c.Check(t, d.Language.Name, d.Reason)
	}
	if d := languages.Detect(nil, "", "make it robust and trustworthy"); d.Language.Name == "rust" {
		t.Errorf("a task with rust inside other words is Rust's")
	}
	if l, err := languages.Lookup("RS"); err != nil || l.Name != "rust" {
		t.Errorf("Lookup(RS) = %v, %v", l.Name, err)
	}
}

// TestTests: integration tests are the protected test files; unit tests
// sit inside the source files and are not; a step naming no test builds
// everything and runs none.
func TestTests(t *testing.T) {
	tests := rust.Language().Tests
	langtest.CheckIsTestFile(t, tests.IsTestFile, map[string]bool{"tests/parse.rs": true, "tests/fixtures/in.txt": true, "src/lib.rs": false, "src/tests.rs": false, "benches/b.rs": false})
	cmd, err := tests.Named(nil)
	if err != nil || !slices.Equal(cmd, tests.Compile) || !slices.Contains(cmd, "--no-run") {
		t.Errorf("Named(nil) = %q, %v; want the compile check %q", cmd, err, tests.Compile)
	}
	cmd, _ = tests.Named([]string{"tests::it_adds", "it's"})
	if n := len(cmd); n < 2 || cmd[n-2] != "tests::it_adds" || cmd[n-1] != "it's" {
		t.Errorf("Named = %q, want the names as arguments of their own", cmd)
	}
}
