//go:build unix

package activities

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDepsDirBelongsToTheWorker: the directory installs are kept in is the
// worker's own and no one else may write it; one another user made first
// (the default lies in the shared temporary directory), or a symlink, is
// refused rather than trusted with what the tests import.
func TestDepsDirBelongsToTheWorker(t *testing.T) {
	root := t.TempDir()
	fresh := filepath.Join(root, "fresh")
	if err := ownDepsDir(fresh); err != nil {
		t.Fatal(err)
	}
	open := filepath.Join(root, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if err := ownDepsDir(open); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{fresh, open} {
		if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o711 {
			t.Errorf("%s: mode %v, want 0711", filepath.Base(dir), fi.Mode().Perm())
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(fresh, link); err != nil {
		t.Fatal(err)
	}
	if err := ownDepsDir(link); err == nil {
		t.Errorf("a symlink was taken for the directory of installs")
	}
	if os.Geteuid() != 0 {
		t.Skip("making another user's directory needs root")
	}
	planted := filepath.Join(root, "planted")
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := ownDepsDir(planted); err == nil {
		t.Errorf("another user's directory was taken for the directory of installs")
	}
}
