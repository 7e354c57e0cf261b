package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	sqlitemigrate "github.com/golang-migrate/migrate/v4/database/sqlite"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/autocoder/autocoder/internal/lru"
	"github.com/autocoder/autocoder/internal/workspace"
)

// SQLite is the embedded backend. Several processes may share one file:
// WAL lets readers run beside the single writer, writers queue on the file
// lock through busy_timeout, and migrations run under a lock file.
type SQLite struct {
	db *sql.DB
	// memo writes memos with synchronous=NORMAL: in WAL mode a commit
	// then survives the process but does not wait for an fsync.
	memo *sql.DB
	path string
	// mu queues this process's writers in order instead of letting them
	// poll for the file's write lock.
	mu        sync.Mutex
	manifests *lru.Cache[[]Entry] // see manifestCacheSize
}

var _ Store = (*SQLite)(nil)

// sqliteDSN opens path with the pragmas every connection needs, and
// synchronous FULL or NORMAL (see SQLite.memo). Write
// transactions begin IMMEDIATE so they take the write lock up front and
// wait for it, rather than failing when a read lock cannot be upgraded.
func sqliteDSN(path, synchronous string) string {
	return path + "?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(" + synchronous + ")&_txlock=immediate"
}

// OpenSQLite opens or creates the database at path, creating its directory
// with mode 0700, and applies pending migrations.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if path == "" || strings.Contains(path, "?") {
		return nil, fmt.Errorf("open sqlite: unusable path %q", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	if err := migrateSQLite(ctx, path); err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", sqliteDSN(path, "FULL"))
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("open sqlite %s: %w", path, err), db.Close())
	}
	memo, err := sql.Open("sqlite", sqliteDSN(path, "NORMAL"))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open sqlite: %w", err), db.Close())
	}
	slog.DebugContext(ctx, "store opened", "backend", "sqlite", "path", path)
	return &SQLite{db: db, memo: memo, path: path, manifests: &lru.Cache[[]Entry]{Limit: manifestCacheSize}}, nil
}

func migrateSQLite(ctx context.Context, path string) (err error) {
	unlock, err := lockFile(ctx, path+".lock")
	if err != nil {
		return fmt.Errorf("migration lock: %w", err)
	}
	defer func() { err = errors.Join(err, unlock()) }()

	db, err := sql.Open("sqlite", sqliteDSN(path, "FULL"))
	if err != nil {
		return fmt.Errorf("migration connection: %w", err)
	}
	driver, err := sqlitemigrate.WithInstance(db, &sqlitemigrate.Config{})
	if err != nil {
		return errors.Join(fmt.Errorf("migration driver: %w", err), db.Close())
	}
	return migrateUp("sqlite", driver)
}

// lockFile holds an exclusive lock on a small SQLite file until unlock is
// called or the process dies. SQLite's own locking keeps this portable and
// makes it exclusive between connections of one process too.
func lockFile(ctx context.Context, path string) (unlock func() error, err error) {
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(1000)")
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	for {
		_, err = conn.ExecContext(ctx, "BEGIN EXCLUSIVE")
		if err == nil {
			break
		}
		var serr *sqlite.Error
		if !errors.As(err, &serr) || serr.Code()&0xff != sqlite3.SQLITE_BUSY || ctx.Err() != nil {
			return nil, errors.Join(err, conn.Close(), db.Close())
		}
	}
	return func() error {
		_, err := conn.ExecContext(context.Background(), "ROLLBACK")
		return errors.Join(err, conn.Close(), db.Close())
	}, nil
}

// Path returns the database file.
func (s *SQLite) Path() string { return s.path }

// Close releases the connections; other processes keep using the file.
// Dir is the directory the database lives in.
func (s *SQLite) Dir() string { return filepath.Dir(s.path) }

func (s *SQLite) Close() error { return errors.Join(s.memo.Close(), s.db.Close()) }

// PutSnapshot implements Store.
func (s *SQLite) PutSnapshot(ctx context.Context, files []workspace.File) (string, error) {
	p, err := planSnapshot(files)
	if err != nil {
		return "", fmt.Errorf("put snapshot: %w", err)
	}
	return s.put(ctx, p)
}

// PutSnapshotDelta implements Store.
func (s *SQLite) PutSnapshotDelta(ctx context.Context, base string, writes []workspace.File, deletes []string) (string, error) {
	p, err := planFromBase(ctx, s, s.manifests, base, writes, deletes)
	if err != nil {
		return "", err
	}
	return s.put(ctx, p)
}

func (s *SQLite) put(ctx context.Context, p plan) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.write(ctx, p); err != nil {
		return "", fmt.Errorf("put snapshot %s: %w", p.id, err)
	}
	writeStep("committed")
	s.manifests.Put(p.id, p.entries) // the next change is likely over it
	return p.id, nil
}

func (s *SQLite) write(ctx context.Context, p plan) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit

	// Inserting the snapshot row first makes an existing id a cheap no-op.
	res, err := tx.ExecContext(ctx, `INSERT INTO snapshots (id, base_id, depth) VALUES (?, NULLIF(?, ''), ?) ON CONFLICT (id) DO NOTHING`,
		p.id, p.base, p.depth)
	if err != nil {
		return fmt.Errorf("insert snapshot: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // n == 0: stored before, nothing to add
	}
	writeStep("snapshot row")

	blobStmt, err := tx.PrepareContext(ctx, `INSERT INTO blobs (hash, data, size) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`)
	if err != nil {
		return fmt.Errorf("prepare blobs: %w", err)
	}
	defer blobStmt.Close()
	for _, b := range p.blobs {
		if _, err := blobStmt.ExecContext(ctx, b.hash, b.data, len(b.data)); err != nil {
			return fmt.Errorf("insert blob: %w", err)
		}
	}

	entryStmt, err := tx.PrepareContext(ctx, `INSERT INTO snapshot_entries (snapshot_id, path, hash, mode, size) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("prepare entries: %w", err)
	}
	defer entryStmt.Close()
	for _, e := range p.added {
		if _, err := entryStmt.ExecContext(ctx, p.id, e.Path, e.Hash, e.Mode, e.Size); err != nil {
			return fmt.Errorf("insert entry: %w", err)
		}
	}
	for _, path := range p.deleted {
		if _, err := tx.ExecContext(ctx, `INSERT INTO snapshot_deletions (snapshot_id, path) VALUES (?, ?)`, p.id, path); err != nil {
			return fmt.Errorf("insert deletion: %w", err)
		}
	}
	writeStep("entries")
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// GetSnapshot implements Store.
func (s *SQLite) GetSnapshot(ctx context.Context, id string) ([]workspace.File, error) {
	return getSnapshot(ctx, s, id)
}

// GetManifest implements Store.
func (s *SQLite) GetManifest(ctx context.Context, id string) (Manifest, error) {
	return getManifest(ctx, s, id)
}

func (s *SQLite) readEntries(ctx context.Context, id string, withData bool, visit func(Entry, []byte) error) error {
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM snapshots WHERE id = ?`, id).Scan(new(int))
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	// Snapshots are immutable once committed, so reading the entries
	// outside the existence check's transaction is consistent.
	rs, err := s.db.QueryContext(ctx, entriesQuery(sqliteSQL, withData), id)
	if err != nil {
		return err
	}
	defer rs.Close()
	return scanEntries(rs, visit)
}

func (s *SQLite) depth(ctx context.Context, id string) (int, error) {
	var d int
	err := s.db.QueryRowContext(ctx, `SELECT depth FROM snapshots WHERE id = ?`, id).Scan(&d)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, ErrNotFound
	}
	return d, err
}

// GetBlob implements Store.
func (s *SQLite) GetBlob(ctx context.Context, hash string) ([]byte, error) {
	var data []byte
	err := s.db.QueryRowContext(ctx, `SELECT data FROM blobs WHERE hash = ?`, hash).Scan(&data)
	return checkedBlob(hash, data, err)
}

// PutMemo implements Store.
func (s *SQLite) PutMemo(ctx context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.memo.ExecContext(ctx, `INSERT INTO memo (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`, key, nonNil(value))
	if err != nil {
		return fmt.Errorf("put memo %q: %w", key, err)
	}
	return nil
}

// GetMemo implements Store.
func (s *SQLite) GetMemo(ctx context.Context, key string) ([]byte, error) {
	var value []byte
	err := s.db.QueryRowContext(ctx, `SELECT value FROM memo WHERE key = ?`, key).Scan(&value)
	return checkedMemo(key, value, err)
}

// Stats implements Store.
func (s *SQLite) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM blobs), (SELECT coalesce(sum(size), 0) FROM blobs), (SELECT count(*) FROM snapshots)`).
		Scan(&st.Blobs, &st.BlobBytes, &st.Snapshots)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// ID is the store's identity (Store.ID).
func (s *SQLite) ID(ctx context.Context) (string, error) {
	var id string
	if err := s.db.QueryRowContext(ctx, `SELECT id FROM store_id`).Scan(&id); err != nil {
		return "", fmt.Errorf("store id: %w", err)
	}
	return id, nil
}

// Snapshots lists every snapshot id in id order.
func (s *SQLite) Snapshots(ctx context.Context) ([]string, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT id FROM snapshots ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	defer rs.Close()
	ids, err := scanStrings(rs)
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	return ids, nil
}
