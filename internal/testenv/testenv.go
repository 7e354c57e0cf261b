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
			strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "ANTHROPIC_") || name == "OLLAMA_HOST" ||
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
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

// Binary builds the autocoder command once per test process and returns
// its path. Call Cleanup from TestMain to remove it.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := repoRoot()
		if err != nil {
			buildErr = err
			return
		}
		if binDir, buildErr = os.MkdirTemp("", "autocoder-bin-"); buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, "autocoder"), ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build autocoder: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "autocoder")
}

// Cleanup removes the built binary.
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
