package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/workspace"
)

// TestSnapshotReadsUseKeys: SQLite reads a snapshot's layers, entries and
// blobs by key, never by scanning a table, so a read costs what the
// snapshot holds however many others the store keeps.
func TestSnapshotReadsUseKeys(t *testing.T) {
	s := openTarget(t, sqliteTarget(t)).(*SQLite)
	for _, data := range []bool{false, true} {
		rs, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+entriesQuery(sqliteSQL, data), "id")
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rs.Next() {
			var id, parent, unused int
			var detail string
			if err := rs.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rs.Close()
		for _, step := range plan {
			for _, table := range []string{"snapshots", "snapshot_entries", "snapshot_deletions", "blobs", "e", "d", "b", "s"} {
				if step == "SCAN "+table || strings.HasPrefix(step, "SCAN "+table+" ") || strings.Contains(step, "(hash>?)") {
					t.Errorf("reading (with data: %v) scans a table: %q in\n%s", data, step, strings.Join(plan, "\n"))
				}
			}
		}
	}
}

// TestCorruptLayerChainEnds: two snapshots stored as each other's base (a
// cycle only a corrupt database can hold) still read back, and Verify
// reports them, instead of the read going round for ever.
func TestCorruptLayerChainEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := openTarget(t, sqliteTarget(t)).(*SQLite)
	base := mustPut(t, s, genFiles(3, 10, "cycle"))
	a, err := s.PutSnapshotDelta(ctx, base, []workspace.File{{Path: "a", Data: []byte("a")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.PutSnapshotDelta(ctx, a, []workspace.File{{Path: "b", Data: []byte("b")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE snapshots SET base_id = ?, depth = 2 WHERE id = ?`, b, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSnapshot(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := Verify(ctx, s); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify: %v, want ErrCorrupt", err)
	}
}
