// Package testenv holds what the integration tests share: the rule that a
// missing service fails in CI, free ports, a clean environment for child
// processes, the built autocoder binary and the fleet of worker processes
// of a test cluster.
package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// RequireService fails the test in CI (CI=true) and skips it elsewhere when
// err says a service the test needs is missing.
func RequireService(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI: %v", what, err)
	}
	t.Skipf("%s unavailable: %v", what, err)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago. It
// is chosen below Linux's ephemeral range (32768 and up), so outgoing
// connections of other processes cannot take it before a test that stops
// and restarts a server on it binds it again.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		return p
	}
	t.Fatal("no free port in 20000-31999")
	return 0
}

// CleanEnv is this process's environment without anything that would point
// a child autocoder at another Temporal, store or model, plus extra.
func CleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "TEMPORAL_") || strings.HasPrefix(name, "AUTOCODER_") ||
			strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "ANTHROPIC_") || strings.HasPrefix(name, "GEMINI_") || name == "GOOGLE_API_KEY" || name == "OLLAMA_HOST" ||
			name == "XDG_CONFIG_HOME" {
			continue
		}
		env = append(env, kv)
	}
	// No user configuration file: a directory that holds none.
	env = append(env, "XDG_CONFIG_HOME="+filepath.Join(os.TempDir(), "autocoder-tests-no-user-config"))
	return append(env, extra...)
}

var (
	binDir   string
	buildsMu sync.Mutex
	builds   = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Binary builds the autocoder command once per test process and returns
// its path. Call Cleanup from TestMain to remove it.
func Binary(t testing.TB) string {
	t.Helper()
	return Build(t, ".", "autocoder")
}

// BinaryCgo is the autocoder command built with CGO_ENABLED set to cgo:
// a static executable without cgo, a dynamically linked one with it.
// Where that is the toolchain's default, it is Binary's build.
func BinaryCgo(t testing.TB, cgo bool) string {
	t.Helper()
	if cgoValue(cgo) == defaultCgo() {
		return Binary(t)
	}
	return Build(t, ".", "autocoder-cgo"+cgoValue(cgo), "CGO_ENABLED="+cgoValue(cgo))
}

// defaultCgo is the CGO_ENABLED a build without it gets ("" if go cannot
// tell).
var defaultCgo = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "CGO_ENABLED").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

// Forwarder is the egress forwarder alone (sandbox/cmd/egress-forward),
// for sandbox Config.Forwarder: static, or with cgo dynamically linked.
func Forwarder(t testing.TB, cgo bool) string {
	t.Helper()
	return Build(t, "./sandbox/cmd/egress-forward", "egress-forward-cgo"+cgoValue(cgo), "CGO_ENABLED="+cgoValue(cgo))
}

func cgoValue(cgo bool) string {
	if cgo {
		return "1"
	}
	return "0"
}

// Build builds the main package pkg (relative to the repository root),
// with env added to the environment, once per test process, as name in a
// directory every user can read (sandboxes mount what is built there).
// Call Cleanup from TestMain to remove it.
func Build(t testing.TB, pkg, name string, env ...string) string {
	t.Helper()
	buildsMu.Lock()
	if binDir == "" {
		dir, err := os.MkdirTemp("", "autocoder-bin-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			buildsMu.Unlock()
			t.Fatal(err)
		}
		binDir = dir
	}
	b := builds[name]
	if b == nil {
		b = &build{}
		builds[name] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			b.err = err
			return
		}
		path := filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-o", path, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("build %s: %v\n%s", pkg, err, out)
			return
		}
		b.path = path
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Cleanup removes the built binaries.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// repoRoot is the directory of the go.mod above the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Tree describes everything under root, root included, without following
// symlinks: each path maps to its mode and its content's hash (regular
// files) or its target (symlinks). Two calls compare equal only when
// nothing under root was added, removed or changed.
func Tree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			desc += " " + hex.EncodeToString(sum[:])
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TreeChanges lists the paths added, removed or changed between two Trees.
func TreeChanges(before, after map[string]string) []string {
	var paths []string
	for p, d := range after {
		if before[p] != d {
			paths = append(paths, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			paths = append(paths, p+" (removed)")
		}
	}
	slices.Sort(paths)
	return paths
}

// RepoRoot is the repository's root: the directory of the go.mod above
// the test's working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
