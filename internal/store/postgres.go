package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	pgxmigrate "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/autocoder/autocoder/internal/lru"
	"github.com/autocoder/autocoder/internal/workspace"
)

// Postgres is the shared backend for teams and several workers.
type Postgres struct {
	pool      *pgxpool.Pool
	manifests *lru.Cache[[]Entry] // see manifestCacheSize
}

var _ Store = (*Postgres)(nil)

// OpenPostgres connects to url and applies pending migrations. Concurrent
// openers queue on a session advisory lock taken by the migration driver.
func OpenPostgres(ctx context.Context, url string) (*Postgres, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := migratePostgres(cfg.ConnConfig); err != nil {
		return nil, fmt.Errorf("open postgres %s: %w", cfg.ConnConfig.Database, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres %s: %w", cfg.ConnConfig.Database, err)
	}
	slog.DebugContext(ctx, "store opened", "backend", "postgres",
		"host", cfg.ConnConfig.Host, "database", cfg.ConnConfig.Database)
	return &Postgres{pool: pool, manifests: &lru.Cache[[]Entry]{Limit: manifestCacheSize}}, nil
}

func migratePostgres(cc *pgx.ConnConfig) error {
	db := stdlib.OpenDB(*cc)
	driver, err := pgxmigrate.WithInstance(db, &pgxmigrate.Config{})
	if err != nil {
		return errors.Join(fmt.Errorf("migration driver: %w", err), db.Close())
	}
	return migrateUp("postgres", driver)
}

// Close releases the pool.
func (s *Postgres) Close() error {
	s.pool.Close()
	return nil
}

// PutSnapshot implements Store.
func (s *Postgres) PutSnapshot(ctx context.Context, files []workspace.File) (string, error) {
	p, err := planSnapshot(files)
	if err != nil {
		return "", fmt.Errorf("put snapshot: %w", err)
	}
	return s.put(ctx, p)
}

// PutSnapshotDelta implements Store.
func (s *Postgres) PutSnapshotDelta(ctx context.Context, base string, writes []workspace.File, deletes []string) (string, error) {
	p, err := planFromBase(ctx, s, s.manifests, base, writes, deletes)
	if err != nil {
		return "", err
	}
	return s.put(ctx, p)
}

func (s *Postgres) put(ctx context.Context, p plan) (string, error) {
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return writePostgres(ctx, tx, p) }); err != nil {
		return "", fmt.Errorf("put snapshot %s: %w", p.id, err)
	}
	writeStep("committed")
	s.manifests.Put(p.id, p.entries) // the next change is likely over it
	return p.id, nil
}

func writePostgres(ctx context.Context, tx pgx.Tx, p plan) error {
	// Inserting the snapshot row first makes an existing id a cheap no-op,
	// and a concurrent writer of the same id waits here for the first one.
	tag, err := tx.Exec(ctx, `INSERT INTO snapshots (id, base_id, depth) VALUES ($1, NULLIF($2, ''), $3) ON CONFLICT (id) DO NOTHING`,
		p.id, p.base, p.depth)
	if err != nil {
		return fmt.Errorf("insert snapshot: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	writeStep("snapshot row")

	// Blobs are never deleted, so content already stored need not be sent.
	hashes := make([]string, len(p.blobs))
	for i, b := range p.blobs {
		hashes[i] = b.hash
	}
	rs, err := tx.Query(ctx, `SELECT hash FROM blobs WHERE hash = ANY($1)`, hashes)
	if err != nil {
		return fmt.Errorf("find blobs: %w", err)
	}
	stored, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("find blobs: %w", err)
	}
	have := make(map[string]bool, len(stored))
	for _, h := range stored {
		have[h] = true
	}
	var newHashes []string
	var newData [][]byte
	var newSizes []int64
	for _, b := range p.blobs {
		if !have[b.hash] {
			newHashes = append(newHashes, b.hash)
			newData = append(newData, b.data)
			newSizes = append(newSizes, int64(len(b.data)))
		}
	}
	if len(newHashes) > 0 {
		// One statement for all blobs; ON CONFLICT covers a concurrent
		// writer storing the same content, in hash order to avoid deadlock.
		_, err = tx.Exec(ctx, `INSERT INTO blobs (hash, data, size)
			SELECT * FROM unnest($1::text[], $2::bytea[], $3::bigint[]) ORDER BY 1
			ON CONFLICT (hash) DO NOTHING`, newHashes, newData, newSizes)
		if err != nil {
			return fmt.Errorf("insert blobs: %w", err)
		}
	}

	_, err = tx.CopyFrom(ctx, pgx.Identifier{"snapshot_entries"},
		[]string{"snapshot_id", "path", "hash", "mode", "size"},
		pgx.CopyFromSlice(len(p.added), func(i int) ([]any, error) {
			e := p.added[i]
			return []any{p.id, e.Path, e.Hash, int32(e.Mode), e.Size}, nil
		}))
	if err != nil {
		return fmt.Errorf("copy entries: %w", err)
	}
	if len(p.deleted) > 0 {
		_, err = tx.Exec(ctx, `INSERT INTO snapshot_deletions (snapshot_id, path) SELECT $1, unnest($2::text[])`, p.id, p.deleted)
		if err != nil {
			return fmt.Errorf("insert deletions: %w", err)
		}
	}
	writeStep("entries")
	return nil
}

// GetSnapshot implements Store.
func (s *Postgres) GetSnapshot(ctx context.Context, id string) ([]workspace.File, error) {
	return getSnapshot(ctx, s, id)
}

// GetManifest implements Store.
func (s *Postgres) GetManifest(ctx context.Context, id string) (Manifest, error) {
	return getManifest(ctx, s, id)
}

func (s *Postgres) readEntries(ctx context.Context, id string, withData bool, visit func(Entry, []byte) error) error {
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM snapshots WHERE id = $1`, id).Scan(new(int32))
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if err != nil {
		return err
	}
	// Snapshots are immutable once committed, so reading the entries
	// outside the existence check's transaction is consistent.
	rs, err := s.pool.Query(ctx, entriesQuery(postgresSQL, withData), id)
	if err != nil {
		return err
	}
	defer rs.Close()
	return scanEntries(rs, visit)
}

func (s *Postgres) depth(ctx context.Context, id string) (int, error) {
	var d int32
	err := s.pool.QueryRow(ctx, `SELECT depth FROM snapshots WHERE id = $1`, id).Scan(&d)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	return int(d), err
}

// GetBlob implements Store.
func (s *Postgres) GetBlob(ctx context.Context, hash string) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, `SELECT data FROM blobs WHERE hash = $1`, hash).Scan(&data)
	return checkedBlob(hash, data, err)
}

// PutMemo implements Store.
func (s *Postgres) PutMemo(ctx context.Context, key string, value []byte) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The commit does not wait for the WAL to reach the disk.
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO memo (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, created_at = excluded.created_at`, key, nonNil(value))
		return err
	})
	if err != nil {
		return fmt.Errorf("put memo %q: %w", key, err)
	}
	return nil
}

// GetMemo implements Store.
func (s *Postgres) GetMemo(ctx context.Context, key string) ([]byte, error) {
	var value []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM memo WHERE key = $1`, key).Scan(&value)
	return checkedMemo(key, value, err)
}

// Stats implements Store.
func (s *Postgres) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM blobs), (SELECT coalesce(sum(size), 0)::bigint FROM blobs), (SELECT count(*) FROM snapshots)`).
		Scan(&st.Blobs, &st.BlobBytes, &st.Snapshots)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	return st, nil
}

// ID is the store's identity (Store.ID).
func (s *Postgres) ID(ctx context.Context) (string, error) {
	var id string
	if err := s.pool.QueryRow(ctx, `SELECT id FROM store_id`).Scan(&id); err != nil {
		return "", fmt.Errorf("store id: %w", err)
	}
	return id, nil
}

// Snapshots lists every snapshot id in id order.
func (s *Postgres) Snapshots(ctx context.Context) ([]string, error) {
	rs, err := s.pool.Query(ctx, `SELECT id FROM snapshots ORDER BY id COLLATE "C"`)
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
