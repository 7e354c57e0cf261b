package store

import (
	"context"
	"errors"
	"fmt"
)

// Config picks a backend: Postgres when DatabaseURL is set, else SQLite.
type Config struct {
	DatabaseURL string // postgres://…; the store.url setting
	SQLitePath  string // <data dir>/autocoder.db
}

// Open opens the configured backend and applies its migrations.
func Open(ctx context.Context, cfg Config) (Store, error) {
	if cfg.DatabaseURL != "" {
		return OpenPostgres(ctx, cfg.DatabaseURL)
	}
	if cfg.SQLitePath == "" {
		// The data dir is the configuration's to resolve (internal/config).
		return nil, errors.New("open store: no database URL and no SQLite path")
	}
	return OpenSQLite(ctx, cfg.SQLitePath)
}

// Lister is a Store that can enumerate its snapshots.
type Lister interface {
	Store
	Snapshots(ctx context.Context) ([]string, error)
}

// Verify reads every snapshot whole and checks that its manifest hashes to
// its id and each blob to its address. It reports every bad snapshot.
func Verify(ctx context.Context, s Lister) error {
	ids, err := s.Snapshots(ctx)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	var errs []error
	for _, id := range ids {
		m, err := s.GetManifest(ctx, id)
		if err == nil {
			_, err = s.GetSnapshot(ctx, id) // hash-checks every blob
		}
		if err == nil && manifestID(m.Entries) != id {
			err = fmt.Errorf("%w: snapshot %s has a manifest hashing to %s", ErrCorrupt, id, manifestID(m.Entries))
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("verify %d snapshots: %w", len(ids), errors.Join(errs...))
	}
	return nil
}
