package store

import (
	"context"
	"strings"
	"testing"
)

// TestSnapshotReadsUseKeys: SQLite reads a snapshot's layers, entries and
// blobs by key, never by scanning a table, so a read costs what the
// snapshot holds however many others the store keeps.
func TestSnapshotReadsUseKeys(t *testing.T) {
	s := openTarget(t, sqliteTarget(t)).(*SQLite)
	for _, data := range []string{"NULL", "b.data"} {
		rs, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+entriesQuery("?", data, "NULL, NULL, NULL"), "id")
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
					t.Errorf("reading with data %s scans a table: %q in\n%s", data, step, strings.Join(plan, "\n"))
				}
			}
		}
	}
}
