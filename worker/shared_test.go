package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSharedDirCopy: a copy is named by its content, readable by all,
// executable when its source is, made once, and a new content gets a
// new name beside the old one (a worker of another version keeps its
// own).
func TestSharedDirCopy(t *testing.T) {
	d := SharedDir(t.TempDir())
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "forward")
	if err := os.WriteFile(src, []byte("v1"), 0o700); err != nil {
		t.Fatal(err)
	}
	first, err := d.Copy(src, "egress-forward")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(first), "egress-forward-") || filepath.Dir(first) != string(d) {
		t.Errorf("copy at %s, want egress-forward-<hash> in %s", first, d)
	}
	if fi, err := os.Stat(first); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("copy mode = %v (%v), want r-xr-xr-x", fi.Mode(), err)
	}
	again, err := d.Copy(src, "egress-forward")
	if err != nil || again != first {
		t.Errorf("second copy = %s, %v; want %s again", again, err, first)
	}
	if err := os.WriteFile(src, []byte("v2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := d.Copy(src, "egress-forward")
	if err != nil || second == first {
		t.Fatalf("copy of a new content = %s, %v; want a new name", second, err)
	}
	if data, _ := os.ReadFile(first); string(data) != "v1" {
		t.Errorf("the first copy now holds %q", data)
	}
	if fi, err := os.Stat(second); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("copy of a file no one may run: mode %v (%v), want r--r--r--", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(string(d))
	if len(ents) != 2 {
		t.Errorf("the directory holds %d entries, want the two copies alone", len(ents))
	}
}

func TestSharedDirCheck(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]SharedDir{
		"missing":   SharedDir(filepath.Join(t.TempDir(), "nothing")),
		"not a dir": SharedDir(file),
	} {
		if err := d.Check(); err == nil || !strings.Contains(err.Error(), "sandbox.shared_dir") {
			t.Errorf("%s: Check = %v, want an error naming sandbox.shared_dir", name, err)
		}
	}
}
