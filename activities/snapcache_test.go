package activities

import (
	"context"
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
	if _, ok := c.get("huge"); ok {
		t.Fatal("a snapshot over the bound was kept")
	}
	if _, bytes := c.cache().Len(); bytes != 80 {
		t.Fatalf("%d bytes held, want 80", bytes)
	}
}

// A workspace stored as a change of its base is the snapshot the same files
// make stored whole, read back from the store alone.
func TestPutChangedStoresTheNextWorkspace(t *testing.T) {
	ctx := context.Background()
	e := newEnvAt(t, "http://127.0.0.1:1")
	before := []workspace.File{
		{Path: "a.py", Data: []byte("a = 1\n")},
		{Path: "b.py", Data: []byte("b = 2\n")},
		{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")},
	}
	base, err := e.acts.Store.PutSnapshot(ctx, before)
	if err != nil {
		t.Fatal(err)
	}
	next := []workspace.File{
		{Path: "a.py", Data: []byte("a = 10\n")},
		{Path: "run.sh", Data: []byte("#!/bin/sh\n")},
		{Path: "pkg/c.py", Data: []byte("c = 3\n")},
	}
	id, err := e.acts.putChanged(ctx, base, before, next)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := e.acts.Store.PutSnapshot(ctx, next)
	if err != nil || whole != id {
		t.Fatalf("stored as a change: %s; whole: %s, %v", id, whole, err)
	}
	got, err := e.acts.Store.GetSnapshot(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Path != "a.py" || string(got[0].Data) != "a = 10\n" || got[1].Path != "pkg/c.py" || got[2].FileMode() != 0o644 {
		t.Fatalf("read back %+v", got)
	}
	if cached, ok := e.acts.snapshots.get(id); !ok || len(cached) != 3 {
		t.Fatalf("the next workspace is not cached: %v", cached)
	}
}
