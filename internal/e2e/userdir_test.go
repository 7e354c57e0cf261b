package e2e

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/workflows"
)

const (
	buggyCalc = "def add(a, b):\n    return a - b\n"
	calcTest  = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
)

// requireBackend skips (fails in CI) when the sandbox backend cannot run
// python tests here.
func requireBackend(t *testing.T, backend string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sb, err := sandbox.New(ctx, sandbox.Config{Backend: backend, Profiles: profilesOf("python"), PoolSize: -1})
	testenv.RequireService(t, "the "+backend+" sandbox", err)
	sb.Close()
}

// gitProject is a python project with a failing test, committed in a git
// repository of its own.
func gitProject(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"calc.py": buggyCalc, "test_calc.py": calcTest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-q", "-m", "start"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// plantInSnapshot adds a file to a stored snapshot behind the store's back,
// as a snapshot stored before the path rules existed would hold it.
func plantInSnapshot(t *testing.T, dataDir, snapshot, path, body string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dataDir, "autocoder.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sum := sha256.Sum256([]byte(body))
	hash := hex.EncodeToString(sum[:])
	if _, err := db.Exec(`INSERT INTO blobs (hash, data, size) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`, hash, []byte(body), len(body)); err != nil {
		t.Fatalf("plant blob: %v", err)
	}
	if _, err := db.Exec(`INSERT INTO snapshot_entries (snapshot_id, path, hash, mode, size) VALUES (?, ?, ?, ?, ?)`, snapshot, path, hash, 0o644, len(body)); err != nil {
		t.Fatalf("plant entry: %v", err)
	}
}

// TestModelCannotReachTheUsersGit: a model whose answer fixes the bug and
// also writes .git/config with an fsmonitor command and a pre-commit hook
// gets that answer rejected. After run, export --patch and export --git,
// the command has never run and the user's .git is byte for byte as it
// was; a snapshot that holds .git/config anyway (stored before the rule)
// is refused whole by every export.
func TestModelCannotReachTheUsersGit(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"docker", "bwrap"} {
		t.Run(backend, func(t *testing.T) {
			requireBackend(t, backend)
			canary := filepath.Join(t.TempDir(), "canary")
			config := "[core]\n\tfsmonitor = \"touch " + canary + "; false\"\n"
			hostile := fence(".git/config", config) + fence(".git/hooks/pre-commit", "#!/bin/sh\ntouch "+canary+"\n")
			fix := edit("calc.py", "    return a - b", "    return a + b")
			c := newCluster(t, llmtest.Rules(
				llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: "1. Fix add in calc.py."}},
				llmtest.Rule{Contains: retryMarker, Reply: llmtest.Reply{Content: fix}},
				llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: fix + hostile}},
			), "AUTOCODER_SANDBOX="+backend)
			proj := gitProject(t)
			userGit := filepath.Join(proj, ".git")
			before := testenv.Tree(t, userGit)
			unchanged := func(when string) {
				t.Helper()
				if _, err := os.Stat(canary); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("%s: the model's command ran on the host (canary: %v)", when, err)
				}
				if diff := testenv.TreeChanges(before, testenv.Tree(t, userGit)); len(diff) > 0 {
					t.Fatalf("%s: the user's .git changed: %v", when, diff)
				}
			}

			out := c.mustCLI("run", "--dir", proj, "--lang", "python", "--test-cmd", "python3 -m pytest -q", "--json", "Fix the failing test in calc.py")
			var res struct{ ID string }
			if err := json.Unmarshal([]byte(out), &res); err != nil || res.ID == "" {
				t.Fatalf("run --json printed %q: %v", out, err)
			}
			unchanged("after run")
			if b, _ := os.ReadFile(filepath.Join(proj, "calc.py")); !strings.Contains(string(b), "return a + b") {
				t.Errorf("calc.py after run: %q", b)
			}
			st := c.status(res.ID)
			if st.Phase != workflows.PhaseSucceeded || st.Iteration != 2 {
				t.Errorf("task ended %s after %d iterations; want the hostile answer rejected, then success", st.Phase, st.Iteration)
			}

			if patch := c.mustCLI("export", res.ID, "--patch"); strings.Contains(patch, ".git/") || !strings.Contains(patch, "+    return a + b") {
				t.Errorf("patch:\n%s", patch)
			}
			repo := filepath.Join(t.TempDir(), "repo")
			c.mustCLI("export", res.ID, repo, "--git")
			unchanged("after export")
			if b, err := os.ReadFile(filepath.Join(repo, ".git", "config")); err != nil || strings.Contains(string(b), "fsmonitor") {
				t.Errorf("exported repository's config: %q, %v", b, err)
			}

			last := st.Checkpoints[len(st.Checkpoints)-1].SnapshotID
			plantInSnapshot(t, envValue(c.env, "AUTOCODER_DATA_DIR"), last, ".git/config", config)
			for _, args := range [][]string{
				{"export", res.ID, "--patch"},
				{"export", res.ID, filepath.Join(t.TempDir(), "repo2"), "--git"},
				{"export", res.ID, filepath.Join(t.TempDir(), "plain")},
			} {
				stdout, stderr, code := c.cli(args...)
				if code == 0 || !strings.Contains(stderr, "version-control metadata") || strings.Contains(stdout, "fsmonitor") {
					t.Errorf("autocoder %v with .git/config in the snapshot: exit %d\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
				}
				if len(args) == 3 || args[3] == "--git" {
					if _, err := os.Stat(args[2]); !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("autocoder %v failed but created %s", args, args[2])
					}
				}
			}
			unchanged("after exporting a snapshot holding .git/config")

			// The user's next git command must not run the model's either.
			if out, err := exec.Command("git", "-C", proj, "status", "--short").CombinedOutput(); err != nil {
				t.Fatalf("git status: %v\n%s", err, out)
			}
			if _, err := os.Stat(canary); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("git status in the project ran the model's command")
			}
		})
	}
}

// TestFinalWriteRefusesSpecialFilesWithoutWriting: the project holds a
// named pipe and a symlink where the model writes files. run must neither
// hang on the pipe nor write half the files: it fails at once, names both
// paths, and the project is as it was.
func TestFinalWriteRefusesSpecialFilesWithoutWriting(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	answer := edit("calc.py", "    return a - b", "    return a + b") +
		fence("notes.txt", "notes\n") + fence("out.txt", "through the link\n")
	c := newCluster(t, llmtest.Rules(
		llmtest.Rule{Contains: planMarker, Reply: llmtest.Reply{Content: "1. Fix add in calc.py."}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: answer}},
	))
	proj := t.TempDir()
	for name, body := range map[string]string{"calc.py": buggyCalc, "test_calc.py": calcTest} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fifo := filepath.Join(proj, "notes.txt")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // releases a writer stuck opening the pipe
		if fh, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			fh.Close()
		}
	})
	if err := os.Symlink(outside, filepath.Join(proj, "out.txt")); err != nil {
		t.Fatal(err)
	}
	before := testenv.Tree(t, proj)

	run := exec.Command(c.bin, "run", "--dir", proj, "--lang", "python", "--test-cmd", "python3 -m pytest -q", "--json", "Fix the failing test in calc.py")
	run.Env = c.env
	var stdout, stderr syncBuffer
	run.Stdout, run.Stderr = &stdout, &stderr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(2 * time.Minute):
		_ = run.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			t.Fatalf("run hung until SIGTERM\nstderr:\n%s", stderr.String())
		case <-time.After(10 * time.Second):
			_ = run.Process.Kill()
			<-exited
			t.Fatalf("run hung and ignored SIGTERM\nstderr:\n%s", stderr.String())
		}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("run: %v, want exit 1\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, want := range []string{"notes.txt is a named pipe", "symlink in path: out.txt", "nothing was written", "autocoder export"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("run's error lacks %q:\n%s", want, stderr.String())
		}
	}
	if diff := testenv.TreeChanges(before, testenv.Tree(t, proj)); len(diff) > 0 {
		t.Errorf("the project changed: %v", diff)
	}
	if _, err := os.Lstat(outside); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("wrote through the symlink: %v", err)
	}
}
