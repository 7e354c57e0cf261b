package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/autocoder/autocoder/internal/workspace"
)

// entryReader is what a backend provides to read a snapshot back.
type entryReader interface {
	// readEntries calls visit for each entry in path order, with its blob
	// when withData is set; it returns ErrNotFound for an unknown id.
	readEntries(ctx context.Context, id string, withData bool, visit func(Entry, []byte) error) error
	// depth returns how many layers a snapshot has over one stored whole,
	// or ErrNotFound.
	depth(ctx context.Context, id string) (int, error)
}

// dialect is what the snapshot read query needs to know of a backend's
// SQL: its placeholder for the id, and NULLs of the types of the data
// column and of the hash, mode and size columns.
type dialect struct {
	arg, nullData, nulls string
}

var (
	sqliteSQL   = dialect{arg: "?", nullData: "NULL", nulls: "NULL, NULL, NULL"}
	postgresSQL = dialect{arg: "$1", nullData: "NULL::bytea", nulls: "NULL::text, NULL::integer, NULL::bigint"}
)

// entriesQuery selects a snapshot's entries (path, hash, mode, size, and
// the blob's data or NULL) in path order through its layers: for each
// path, the entry of the newest layer that has one, unless a newer layer
// deleted the path. Each layer is shallower than the one over it, so even
// a corrupt chain ends. CROSS JOIN makes SQLite drive each join from its
// left side, so that a read looks up the snapshot's own rows by key
// instead of scanning every snapshot's.
func entriesQuery(d dialect, withData bool) string {
	data, blobs := d.nullData, ` WHERE`
	if withData {
		data, blobs = "b.data", ` CROSS JOIN blobs b WHERE b.hash = t.hash AND`
	}
	return `WITH RECURSIVE chain (id, base_id, depth) AS (
		SELECT id, base_id, depth FROM snapshots WHERE id = ` + d.arg + `
		UNION ALL
		SELECT s.id, s.base_id, s.depth FROM chain c CROSS JOIN snapshots s WHERE s.id = c.base_id AND s.depth < c.depth
	),
	layered (path, hash, mode, size, depth) AS (
		SELECT e.path, e.hash, e.mode, e.size, c.depth FROM chain c CROSS JOIN snapshot_entries e WHERE e.snapshot_id = c.id
		UNION ALL
		SELECT d.path, ` + d.nulls + `, c.depth FROM chain c CROSS JOIN snapshot_deletions d WHERE d.snapshot_id = c.id
	),
	newest AS (
		SELECT path, hash, mode, size, row_number() OVER (PARTITION BY path ORDER BY depth DESC) AS n FROM layered
	)
	SELECT t.path, t.hash, t.mode, t.size, ` + data + ` FROM newest t` + blobs + ` t.n = 1 AND t.hash IS NOT NULL ORDER BY t.path`
}

// rows is the cursor shape shared by database/sql and pgx.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

func getSnapshot(ctx context.Context, r entryReader, id string) ([]workspace.File, error) {
	files := []workspace.File{}
	err := r.readEntries(ctx, id, true, func(e Entry, data []byte) error {
		f, err := fileOf(e, data)
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("get snapshot %s: %w", id, err)
	}
	return files, nil
}

func getManifest(ctx context.Context, r entryReader, id string) (Manifest, error) {
	m := Manifest{ID: id, Entries: []Entry{}}
	err := r.readEntries(ctx, id, false, func(e Entry, _ []byte) error {
		m.Entries = append(m.Entries, e)
		return nil
	})
	if err != nil {
		return Manifest{}, fmt.Errorf("get manifest %s: %w", id, err)
	}
	return m, nil
}

// scanEntries reads (path, hash, mode, size, data) rows.
func scanEntries(rs rows, visit func(Entry, []byte) error) error {
	for rs.Next() {
		var e Entry
		var data []byte
		if err := rs.Scan(&e.Path, &e.Hash, &e.Mode, &e.Size, &data); err != nil {
			return err
		}
		if err := visit(e, data); err != nil {
			return err
		}
	}
	return rs.Err()
}

// scanStrings reads single-column text rows.
func scanStrings(rs rows) ([]string, error) {
	var out []string
	for rs.Next() {
		var s string
		if err := rs.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rs.Err()
}

// checkedBlob finishes a single-blob lookup: absent is ErrNotFound and
// present content must match its hash.
func checkedBlob(hash string, data []byte, err error) ([]byte, error) {
	if errors.Is(err, sql.ErrNoRows) { // pgx.ErrNoRows matches too
		return nil, fmt.Errorf("get blob %s: %w", hash, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get blob %s: %w", hash, err)
	}
	if err := verifyBlob(hash, data); err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	return nonNil(data), nil
}

func checkedMemo(key string, value []byte, err error) ([]byte, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("get memo %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get memo %q: %w", key, err)
	}
	return nonNil(value), nil
}

// nonNil keeps empty content distinct from SQL NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
