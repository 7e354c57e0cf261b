package store

import (
	"context"
	"database/sql"
	"net/url"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	sqlitemigrate "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/autocoder/autocoder/internal/workspace"
)

// TestLayersMigrateDown: going down from the layered schema stores every
// layered snapshot whole, as the schema before it reads snapshots, and
// going up again reads them all as they were.
func TestLayersMigrateDown(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			s := openTarget(t, target)
			files := normalised(genFiles(30, 40, "down"))
			ids := []string{mustPut(t, s, files)}
			want := map[string][]workspace.File{ids[0]: files}
			changes := []struct {
				writes  []workspace.File
				deletes []string
			}{
				{[]workspace.File{{Path: files[1].Path, Data: []byte("one")}}, []string{files[2].Path}},
				{[]workspace.File{{Path: files[2].Path, Data: []byte("back")}, {Path: "new", Mode: 0o755, Data: []byte("x")}}, nil},
				{nil, []string{files[1].Path, "new"}},
			}
			for _, c := range changes {
				id, err := s.PutSnapshotDelta(ctx, ids[len(ids)-1], c.writes, c.deletes)
				if err != nil {
					t.Fatal(err)
				}
				want[id] = applyChange(want[ids[len(ids)-1]], c.writes, c.deletes)
				ids = append(ids, id)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			err := migrateWith(b.name, migrationDriver(t, target), func(m *migrate.Migrate) error { return m.Migrate(3) })
			if err != nil {
				t.Fatal(err)
			}
			db := openDB(t, target)
			defer db.Close()
			for _, id := range ids {
				rs, err := db.QueryContext(ctx, `SELECT path, hash, mode, size, NULL FROM snapshot_entries WHERE snapshot_id = `+placeholder(target)+` ORDER BY path`, id)
				if err != nil {
					t.Fatal(err)
				}
				var got []Entry
				err = scanEntries(rs, func(e Entry, _ []byte) error { got = append(got, e); return nil })
				rs.Close()
				if err != nil {
					t.Fatal(err)
				}
				if whole := mustPlan(t, want[id]); manifestID(got) != id || len(got) != len(whole.entries) {
					t.Fatalf("snapshot %s after going down: %d entries hashing to %s, want %d", id, len(got), manifestID(got), len(whole.entries))
				}
			}
			if _, err := db.ExecContext(ctx, `SELECT 1 FROM snapshot_deletions`); err == nil {
				t.Fatal("snapshot_deletions is still there")
			}

			s = openTarget(t, target) // up again
			for _, id := range ids {
				got, err := s.GetSnapshot(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				assertFiles(t, got, want[id])
			}
			if err := Verify(ctx, s); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLessonFailedChecksMigrateDown: going down drops the count of failed
// checks and keeps the lessons with their other counts; going up again
// starts the count from 0.
func TestLessonFailedChecksMigrateDown(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			s := openTarget(t, target)
			id := mustSave(t, s, successLesson("go", "cache pages in redis", "1. go-redis"))
			if err := s.MarkRecalled(ctx, []Recall{{ID: id, FailedChecks: 2}}, true); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			err := migrateWith(b.name, migrationDriver(t, target), func(m *migrate.Migrate) error { return m.Migrate(4) })
			if err != nil {
				t.Fatal(err)
			}
			db := openDB(t, target)
			var recalled, succeeded int
			err = db.QueryRowContext(ctx, `SELECT recalled, succeeded FROM lessons WHERE id = `+placeholder(target), id).Scan(&recalled, &succeeded)
			if err != nil || recalled != 1 || succeeded != 1 {
				t.Errorf("after going down: recalled %d, succeeded %d, %v; want the lesson with 1 and 1", recalled, succeeded, err)
			}
			if _, err := db.ExecContext(ctx, `SELECT failed_checks FROM lessons`); err == nil {
				t.Error("failed_checks is still there")
			}
			db.Close()

			s = openTarget(t, target) // up again
			if l := mustGet(t, s, id); l.Recalled != 1 || l.Succeeded != 1 || l.FailedChecks != 0 {
				t.Errorf("after going up: %d/%d/%d failed checks, want 1/1/0", l.Recalled, l.Succeeded, l.FailedChecks)
			}
		})
	}
}

func isPostgres(target string) bool {
	u, err := url.Parse(target)
	return err == nil && u.Scheme == "postgres"
}

func placeholder(target string) string {
	if isPostgres(target) {
		return "$1"
	}
	return "?"
}

// openDB opens target as a plain database.
func openDB(t *testing.T, target string) *sql.DB {
	t.Helper()
	if isPostgres(target) {
		cc, err := pgx.ParseConfig(target)
		if err != nil {
			t.Fatal(err)
		}
		return stdlib.OpenDB(*cc)
	}
	db, err := sql.Open("sqlite", sqliteDSN(target, "FULL"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// migrationDriver returns a migration driver on target; migrating with it
// closes it.
func migrationDriver(t *testing.T, target string) database.Driver {
	t.Helper()
	db := openDB(t, target)
	var driver database.Driver
	var err error
	if isPostgres(target) {
		driver, err = pgxmigrate.WithInstance(db, &pgxmigrate.Config{})
	} else {
		driver, err = sqlitemigrate.WithInstance(db, &sqlitemigrate.Config{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return driver
}
