package sandbox

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
)

const (
	pyPass = "def test_ok():\n    assert 1 + 1 == 2\n"
	pyFail = "def test_bad():\n    assert 1 + 1 == 3, 'arith'\n"
	goMod  = "module example.com/m\n\ngo 1.21\n"
	goPass = "package m\n\nimport \"testing\"\n\nfunc Add(a, b int) int { return a + b }\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n"
	goFail = "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tt.Fatalf(\"want %d\", 4)\n}\n"
)

func TestTestCommands(t *testing.T) {
	cases := []struct {
		name     string
		profile  string
		files    []workspace.File
		exit     int
		contains string
	}{
		{"python pass", "python", files("test_a.py", pyPass), 0, "1 passed"},
		{"python fail", "python", files("test_a.py", pyFail), 1, "1 failed"},
		{"go pass", "go", files("go.mod", goMod, "m_test.go", goPass), 0, "ok  \texample.com/m"},
		{"go fail", "go", files("go.mod", goMod, "m_test.go", goFail), 1, "want 4"},
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					res := run(t, r, Spec{Profile: tc.profile, Files: tc.files})
					if res.ExitCode != tc.exit || !strings.Contains(res.Stdout, tc.contains) {
						t.Fatalf("exit %d (want %d), stdout %q, stderr %q", res.ExitCode, tc.exit, res.Stdout, res.Stderr)
					}
					if res.TimedOut || res.OOMKilled || res.StdoutTruncated {
						t.Fatalf("unexpected flags: %+v", res)
					}
				})
			}
		})
	}
}

func TestFilesModesAndDirs(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			res := run(t, r, Spec{Profile: "python", Files: []workspace.File{
				{Path: "pkg/sub/data.txt", Data: []byte("hello")},
				{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\necho ran \"$@\"\n")},
			}, Cmd: sh(`cat pkg/sub/data.txt; echo; ./run.sh 'a b' "c'd"; pwd; id -u`)})
			want := "hello\nran a b c'd\n/work\n65534\n"
			if res.ExitCode != 0 || res.Stdout != want {
				t.Fatalf("exit %d stdout %q (want %q) stderr %q", res.ExitCode, res.Stdout, want, res.Stderr)
			}
		})
	}
}

// TestCommandArguments checks that argv reaches the program word for word,
// whatever the model put in it: quotes, newlines, shell syntax, empty words.
func TestCommandArguments(t *testing.T) {
	args := []string{"a b", "it's", "two\nlines", "$HOME `id` $(id)", "", "'\"'", "\n", "*"}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			res := run(t, r, Spec{Profile: "python", Cmd: append([]string{"printf", "[%s]"}, args...)})
			want := ""
			for _, a := range args {
				want += "[" + a + "]"
			}
			if res.ExitCode != 0 || res.Stdout != want {
				t.Fatalf("exit %d, stdout %q, want %q (stderr %q)", res.ExitCode, res.Stdout, want, res.Stderr)
			}
		})
	}
}

// TestGoCacheNotTrimmed checks that a run's Go cache carries a trim date of
// today, so Go never trims the seeded entries, however old the seed is.
func TestGoCacheNotTrimmed(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			res := run(t, r, Spec{Profile: "go", Cmd: sh(`test ! -L "$GOCACHE/trim.txt" && cat "$GOCACHE/trim.txt"`)})
			stamp, err := strconv.ParseInt(strings.TrimSpace(res.Stdout), 10, 64)
			if res.ExitCode != 0 || err != nil {
				t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			if d := time.Since(time.Unix(stamp, 0)); d < 0 || d > time.Minute {
				t.Fatalf("trim.txt says %s, %s from now", time.Unix(stamp, 0), d)
			}
		})
	}
}

func TestPrepareRejects(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want error
	}{
		{"dotdot", Spec{Profile: "python", Files: files("../evil.py", "x")}, workspace.ErrUnsafePath},
		{"nested dotdot", Spec{Profile: "python", Files: files("a/../../evil", "x")}, workspace.ErrUnsafePath},
		{"absolute", Spec{Profile: "python", Files: files("/etc/passwd", "x")}, workspace.ErrUnsafePath},
		{"backslash", Spec{Profile: "python", Files: files(`..\x`, "x")}, workspace.ErrUnsafePath},
		{"too big", Spec{Profile: "python", Files: files("a", strings.Repeat("x", 2048)), Limits: Limits{WorkdirBytes: 1024}}, ErrInvalidSpec},
		{"unknown profile", Spec{Profile: "cobol"}, ErrUnknownProfile},
		{"empty argv", Spec{Profile: "python", Cmd: []string{""}}, ErrInvalidSpec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prepare(newProfileSet(testProfiles()), nil, tc.spec)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("err = %v, want %v and ErrInvalidSpec", err, tc.want)
			}
		})
	}
}

func TestCapWriter(t *testing.T) {
	cases := []struct {
		name      string
		max       int64
		writes    []string
		want      string
		truncated bool
	}{
		{"under", 10, []string{"abc", "def"}, "abcdef", false},
		{"exact", 6, []string{"abc", "def"}, "abcdef", false},
		{"split", 4, []string{"abc", "def"}, "abcd", true},
		{"after full", 3, []string{"abc", "d", "ef"}, "abc", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newCapWriter(tc.max)
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("write = %d, %v", n, err)
				}
			}
			got, tr := w.result()
			if got != tc.want || tr != tc.truncated {
				t.Fatalf("got %q %v, want %q %v", got, tr, tc.want, tc.truncated)
			}
		})
	}
}

func TestProfileLookup(t *testing.T) {
	t.Setenv("AUTOCODER_IMAGE_GO", "example/go:test")
	set := newProfileSet(testProfiles("python", "go"))
	cases := []struct {
		name, image, cmd0 string
	}{
		{"python", "autocoder/sandbox-python:2", "python3"},
		{"go", "example/go:test", "go"},
	}
	for _, tc := range cases {
		p, err := set.lookup(tc.name)
		if err != nil || p.Image != tc.image || p.TestCmd[0] != tc.cmd0 {
			t.Fatalf("%s: %+v, %v", tc.name, p, err)
		}
	}
	if _, err := set.lookup("cobol"); !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("cobol: %v", err)
	}
}

func TestNewBackendSelection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := New(ctx, Config{Backend: "vm"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("unknown backend: %v", err)
	}
	t.Setenv("AUTOCODER_IMAGE_PYTHON", "autocoder/sandbox-python:does-not-exist")
	// A missing image does not fail the start: it is built on its
	// language's first run (TestImageBuiltOnFirstUse).
	r, err := New(ctx, Config{Backend: "docker", Profiles: testProfiles("python"), PoolSize: -1})
	if errors.Is(err, ErrUnavailable) {
		testenv.RequireService(t, "docker", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
