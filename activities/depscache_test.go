package activities

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

	if removed, err := evictInstalls(root, 0, now); err != nil || removed != nil {
		t.Fatalf("limit 0: removed %v, %v", removed, err)
	}
	removed, err := evictInstalls(root, 130, now)
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
	if removed, _ := evictInstalls(root, 1, now); !slices.Equal(removed, []string{"go-c"}) {
		t.Errorf("limit 1 removed %v, want [go-c]", removed)
	}
	if want := []string{".install-running", "go-d"}; !slices.Equal(left(), want) {
		t.Errorf("left %v, want %v", left(), want)
	}
}
