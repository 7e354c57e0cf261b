package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
)

// TestDepsRunsTakeWarmSandboxes: on either backend, a run over an install
// leaves a warm sandbox with that install mounted, which the next run over
// it takes; an install made again at the same path is another install,
// which no sandbox made for the old one serves.
func TestDepsRunsTakeWarmSandboxes(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) { testDepsRunsTakeWarmSandboxes(t, backend) })
	}
}

func testDepsRunsTakeWarmSandboxes(t *testing.T, backend string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	m := &runMetrics{runs: map[string]int{}, miss: map[string]int{}}
	r, err := New(ctx, Config{Backend: backend, PoolSize: 1, Profiles: testProfiles(), Metrics: m})
	if err != nil {
		testenv.RequireService(t, backend+" backend", err)
	}
	defer r.Close()
	// Not under t.TempDir(), whose parent bwrap's sandbox user cannot enter.
	root, err := os.MkdirTemp("", "autocoder-depspool-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	deps := filepath.Join(root, "install")
	// Each install removes the last first, so the file system may well
	// give the new directory the old one's inode.
	install := func(version string) {
		t.Helper()
		if err := os.RemoveAll(deps); err != nil {
			t.Fatal(err)
		}
		tmp := deps + ".new"
		if err := os.Mkdir(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "version"), []byte(version), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, deps); err != nil {
			t.Fatal(err)
		}
	}
	misses := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.miss["python"]
	}
	spec := Spec{Profile: "python", Deps: deps, Env: map[string]string{"PYTHONPATH": "/deps"}, Cmd: sh("cat /deps/version")}
	for i, c := range []struct {
		install string // made before the run, when set
		warm    bool
	}{{install: "1"}, {warm: true}, {warm: true}, {install: "2"}, {warm: true}} {
		if c.install != "" {
			install(c.install)
		}
		waitWarm(t, r)
		before := misses()
		res := run(t, r, spec)
		version, _ := os.ReadFile(filepath.Join(deps, "version"))
		if res.ExitCode != 0 || res.Stdout != string(version) {
			t.Fatalf("run %d: exit %d, stdout %q, stderr %q; want the install's version %q", i, res.ExitCode, res.Stdout, res.Stderr, version)
		}
		if warm := misses() == before; warm != c.warm {
			t.Errorf("run %d took a warm sandbox: %v, want %v", i, warm, c.warm)
		}
	}
}
