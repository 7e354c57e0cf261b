package activities

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

func sized(n int) []workspace.File {
	return []workspace.File{{Path: "f", Data: []byte(strings.Repeat("x", n))}}
}

// The cache keeps the most recently used snapshots within its bound and
// never one larger than the bound.
func TestSnapshotCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := snapshotCache{limit: 100}
	c.put("a", sized(40))
	c.put("b", sized(40))
	if _, ok := c.get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.put("c", sized(40)) // over the bound: b goes
	if _, ok := c.get("b"); ok {
		t.Fatal("b kept past the bound")
	}
	for _, id := range []string{"a", "c"} {
		if files, ok := c.get(id); !ok || len(files[0].Data) != 40 {
			t.Fatalf("%s missing", id)
		}
	}
	c.put("huge", sized(101))
	if _, ok := c.get("huge"); ok || c.bytes != 80 {
		t.Fatalf("a snapshot over the bound was kept; %d bytes held", c.bytes)
	}
}
