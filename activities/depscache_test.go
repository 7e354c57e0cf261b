package activities

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// evictInstalls removes the installs used least recently until the rest
// fit, never one used within the last hour, and what crashed installs and
// evictions left; limit 0 removes nothing.
func TestEvictInstalls(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	mk := func(name string, size int, used time.Time) {
		t.Helper()
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(dir, "pkg"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pkg", "f"), []byte(strings.Repeat("x", size)), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, used, used); err != nil {
			t.Fatal(err)
		}
	}
	mk("python-a", 60, now.Add(-3*time.Hour))
	mk("python-b", 60, now.Add(-2*time.Hour))
	mk("go-c", 60, now.Add(-90*time.Minute))
	mk("go-d", 60, now.Add(-time.Minute)) // in use
	mk(".install-crashed", 10, now.Add(-2*time.Hour))
	mk(".install-running", 10, now)
	mk(".evict-half", 10, now)

	if removed, err := evictInstalls(root, 0, now, removeAll); err != nil || removed != nil {
		t.Fatalf("limit 0: removed %v, %v", removed, err)
	}
	removed, err := evictInstalls(root, 130, now, removeAll)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"python-a", "python-b"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v (the two used least recently)", removed, want)
	}
	left := func() []string {
		var names []string
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	if want := []string{".install-running", "go-c", "go-d"}; !slices.Equal(left(), want) {
		t.Errorf("left %v, want %v", left(), want)
	}
	// Over any limit, one used in the last hour stays.
	if removed, _ := evictInstalls(root, 1, now, removeAll); !slices.Equal(removed, []string{"go-c"}) {
		t.Errorf("limit 1 removed %v, want [go-c]", removed)
	}
	if want := []string{".install-running", "go-d"}; !slices.Equal(left(), want) {
		t.Errorf("left %v, want %v", left(), want)
	}
}

// removeAll is removeInstall with no sandbox to fall back on.
var removeAll = (&Activities{}).removeInstall("")

// TestEmptyInstallInSandbox: what the docker sandbox's user installed,
// read-only directories included (a module cache's), is removed by a run
// as that user, for a worker that may not remove it itself.
func TestEmptyInstallInSandbox(t *testing.T) {
	sb := sandboxOf(t, "docker")
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "python-x")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Run(ctx, sandbox.Spec{Profile: "python", Deps: dir, DepsWritable: true, Limits: sandbox.DefaultLimits(),
		Cmd: []string{"sh", "-c", "mkdir -p /deps/pkg/ro && touch /deps/pkg/ro/f /deps/.hidden /deps/..odd && chmod 555 /deps/pkg/ro"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("install: %v %+v", err, res)
	}
	if fi, err := os.Stat(filepath.Join(dir, "pkg")); err != nil || ownedByWorker(fi) {
		t.Fatalf("the install's files should be the sandbox user's: %v", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // as a finished install is
		t.Fatal(err)
	}
	a := &Activities{Sandbox: sb}
	if err := a.emptyInSandbox("python", dir); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Fatalf("left in the install: %v, %v", entries, err)
	}
}

// TestEvictionTakesTurnsAcrossProcesses: while another process holds the
// installs' eviction lock, an eviction leaves the installs to it.
func TestEvictionTakesTurnsAcrossProcesses(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-3 * time.Hour)
	for _, name := range []string{"python-a", "python-new"} {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 100), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// The lock of another process: flock locks are per open file, so a
	// second open of the file in this process stands for one.
	other, err := os.OpenFile(filepath.Join(root, evictionLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	a := &Activities{DepsMaxSize: 150}
	<-a.evictInstalls("python", filepath.Join(root, "python-new"))
	if _, err := os.Stat(filepath.Join(root, "python-a")); err != nil {
		t.Fatalf("evicted while another process held the lock: %v", err)
	}
	other.Close()
	<-a.evictInstalls("python", filepath.Join(root, "python-new"))
	if _, err := os.Stat(filepath.Join(root, "python-a")); !os.IsNotExist(err) {
		t.Errorf("python-a after the lock was released: %v, want it evicted", err)
	}
}

// TestManifestsOfFollowsLocalManifests: the manifests are the language's,
// then the local ones they name, a glob matched against the project's
// files, then those the new ones name, and no other file.
func TestManifestsOfFollowsLocalManifests(t *testing.T) {
	l := lang.Language{Deps: lang.Deps{Manifests: []string{"root.txt"},
		Local: func(m map[string][]byte) []string {
			var out []string
			for _, data := range m {
				out = append(out, strings.Fields(string(data))...)
			}
			return out
		}}}
	files := []workspace.File{
		{Path: "root.txt", Data: []byte("pkgs/*/m.txt tools/**/m.txt")},
		{Path: "pkgs/a/m.txt", Data: []byte("lib/m.txt")},
		{Path: "pkgs/b/m.txt"},
		{Path: "pkgs/b/deep/m.txt"},
		{Path: "lib/m.txt", Data: []byte("root.txt missing.txt")},
		{Path: "other.txt"},
		{Path: "tools/m.txt"},
		{Path: "tools/a/b/m.txt"},
		{Path: "tools/a/other.txt"},
	}
	var got []string
	for _, f := range manifestsOf(l, files) {
		got = append(got, f.Path)
	}
	want := []string{"root.txt", "pkgs/a/m.txt", "pkgs/b/m.txt", "tools/m.txt", "tools/a/b/m.txt", "lib/m.txt"}
	if !slices.Equal(got, want) {
		t.Errorf("manifestsOf = %q, want %q", got, want)
	}
}
