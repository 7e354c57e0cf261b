package store

import (
	"fmt"
	"testing"
)

// The cache keeps the most recently used manifests, manifestCacheSize of
// them.
func TestManifestCacheKeepsTheMostRecent(t *testing.T) {
	var c manifestCache
	for i := range manifestCacheSize {
		c.put(fmt.Sprint(i), []Entry{{Path: fmt.Sprint(i)}})
	}
	if _, ok := c.get("0"); !ok { // 0 is now the most recent
		t.Fatal("0 missing")
	}
	c.put("new", nil) // one too many: 1 goes
	if _, ok := c.get("1"); ok {
		t.Fatal("1 kept past the bound")
	}
	for _, id := range []string{"0", "2", "new"} {
		if _, ok := c.get(id); !ok {
			t.Fatalf("%s missing", id)
		}
	}
	if e, _ := c.get("2"); len(e) != 1 || e[0].Path != "2" {
		t.Fatalf("2 holds %+v", e)
	}
}
