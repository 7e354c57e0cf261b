package rust_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/lang/rust"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// fix is the repository's Rust example's fix: its parse counts an hour
// as 60 seconds.
var fix = langtest.Fix{Path: "src/parse.rs", Old: "'h' => Ok(60)", New: "'h' => Ok(3600)"}

// TestSandbox runs the example in each backend's sandbox: the bwrap one
// with the host's toolchain, the docker one with the language's image.
func TestSandbox(t *testing.T) {
	for _, backend := range []string{"bwrap", "docker"} {
		t.Run(backend, func(t *testing.T) { testBackend(t, backend) })
	}
}

// testBackend: the failing tests are read by the language's Failure, the
// fix passes, the compile check and named tests run.
func testBackend(t *testing.T, backend string) {
	if backend == "bwrap" && rust.HostSysroot() == "" {
		testenv.RequireService(t, "a Rust toolchain the sandbox can read", errors.New("none found (apt-get install cargo)"))
	}
	l := rust.Language()
	r := langtest.Runner(t, backend, l)
	// A cold cargo build takes longer than a run's default limit.
	runIn := func(t *testing.T, files []workspace.File, cmd []string) sandbox.Result {
		t.Helper()
		res, _ := langtest.Run(t, r, sandbox.Spec{Profile: l.Name, Files: files, Cmd: cmd, Limits: sandbox.Limits{Timeout: 3 * time.Minute}})
		return res
	}
	named := func(t *testing.T, tests ...string) []string {
		cmd, err := l.Tests.Named(tests)
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	buggy, fixed := langtest.Example(t, "rust"), langtest.Example(t, "rust", fix)

	t.Run("failing", func(t *testing.T) {
		res := runIn(t, buggy, nil)
		out := res.Stdout + res.Stderr
		if res.ExitCode == 0 {
			t.Fatalf("the buggy example passed:\n%s", out)
		}
		f := l.Failure.Parse(strings.Split(out, "\n"))
		if f.Kind != "rust:test-fail" || len(f.Keys) == 0 || !strings.Contains(strings.Join(f.Keys, "\n"), "Ok(5400)") {
			t.Errorf("Parse = %+v, want a test failure whose keys hold the expected Ok(5400)", f)
		}
		failing := langtest.Failing(l.Failure.Failing, out)
		if slices.Sort(failing); !slices.Equal(failing, []string{"parses_hours", "round_trips"}) {
			t.Errorf("failing tests = %q, want parses_hours and round_trips", failing)
		}
		if d := l.Failure.Digest(out); !strings.Contains(d, "---- parses_hours stdout ----") || !strings.Contains(d, "Ok(5400)") {
			t.Errorf("digest lacks the failing test's assertion:\n%s", d)
		}
	})
	t.Run("fixed", func(t *testing.T) {
		if res := runIn(t, fixed, nil); res.ExitCode != 0 {
			t.Fatalf("the fixed example failed (exit %d):\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
	t.Run("compile", func(t *testing.T) {
		if res := runIn(t, buggy, l.Tests.Compile); res.ExitCode != 0 {
			t.Errorf("the example does not build (exit %d):\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
		}
		broken := append(slices.Clone(buggy), workspace.File{Path: "tests/more.rs", Data: []byte("#[test]\nfn more() { durations::parse(1); }\n")})
		res := runIn(t, broken, l.Tests.Compile)
		if f := l.Failure.Parse(strings.Split(res.Stdout+res.Stderr, "\n")); res.ExitCode == 0 || f.Kind != "rust:E0308" {
			t.Errorf("a test that does not build: exit %d, %+v; want a failure read as rust:E0308:\n%s%s", res.ExitCode, f, res.Stdout, res.Stderr)
		}
	})
	t.Run("named", func(t *testing.T) {
		if res := runIn(t, buggy, named(t, "parses_minutes_and_seconds", "format::tests")); res.ExitCode != 0 {
			t.Errorf("passing named tests failed (exit %d):\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
		}
		if res := runIn(t, buggy, named(t, "parses_hours")); res.ExitCode == 0 {
			t.Errorf("a failing named test passed:\n%s%s", res.Stdout, res.Stderr)
		}
		// A name that matches no test must not pass for want of a test.
		if res := runIn(t, fixed, named(t, "parses_minutes_and_seconds", "parses_days")); res.ExitCode == 0 || !strings.Contains(res.Stdout+res.Stderr, "no test matched parses_days") {
			t.Errorf("a name matching no test passed (exit %d):\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
		}
	})
}
