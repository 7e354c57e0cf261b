package rust_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/rust"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// example is the repository's Rust example: a crate whose parse counts an
// hour as 60 seconds.
const example = "../../../examples/rust"

// exampleFiles reads the example, with the bug fixed when fix is set.
func exampleFiles(t *testing.T, fix bool) []workspace.File {
	t.Helper()
	var files []workspace.File
	err := filepath.WalkDir(example, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(example, p)
		if fix && rel == "src/parse.rs" {
			fixed := bytes.Replace(data, []byte("'h' => Ok(60)"), []byte("'h' => Ok(3600)"), 1)
			if bytes.Equal(fixed, data) {
				t.Fatal("the example's bug is not where the test fixes it")
			}
			data = fixed
		}
		files = append(files, workspace.File{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := sandbox.New(ctx, sandbox.Config{Backend: backend, PoolSize: -1, Profiles: sandbox.ProfilesOf([]lang.Language{l})})
	if err != nil {
		testenv.RequireService(t, backend+" backend", err)
	}
	t.Cleanup(func() { r.Close() })
	runIn := func(t *testing.T, files []workspace.File, cmd []string) sandbox.Result {
		t.Helper()
		res, err := r.Run(ctx, sandbox.Spec{Profile: l.Name, Files: files, Cmd: cmd, Limits: sandbox.Limits{Timeout: 3 * time.Minute}})
		if errors.Is(err, sandbox.ErrImageMissing) {
			testenv.RequireService(t, "the rust image", err)
		}
		if err != nil {
			t.Fatalf("run %q: %v", cmd, err)
		}
		return res
	}
	named := func(t *testing.T, tests ...string) []string {
		cmd, err := l.Tests.Named(tests)
		if err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	buggy, fixed := exampleFiles(t, false), exampleFiles(t, true)

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
		var failing []string
		for _, m := range l.Failure.Failing[0].FindAllStringSubmatch(out, -1) {
			failing = append(failing, m[1])
		}
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
