package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Config picks a backend: Postgres when DatabaseURL is set, else SQLite.
type Config struct {
	DatabaseURL string // postgres://…; usually AUTOCODER_DATABASE_URL
	SQLitePath  string // empty means DefaultSQLitePath()
}

// ConfigFromEnv reads AUTOCODER_DATABASE_URL.
func ConfigFromEnv() Config {
	return Config{DatabaseURL: os.Getenv("AUTOCODER_DATABASE_URL")}
}

// Open opens the configured backend and applies its migrations.
func Open(ctx context.Context, cfg Config) (Store, error) {
	if cfg.DatabaseURL != "" {
		return OpenPostgres(ctx, cfg.DatabaseURL)
	}
	path := cfg.SQLitePath
	if path == "" {
		var err error
		if path, err = DefaultSQLitePath(); err != nil {
			return nil, err
		}
	}
	return OpenSQLite(ctx, path)
}

// DefaultSQLitePath is $XDG_DATA_HOME/autocoder/autocoder.db, falling back
// to ~/.local/share/autocoder/autocoder.db. OpenSQLite creates the
// directory with mode 0700.
func DefaultSQLitePath() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if !filepath.IsAbs(base) { // the XDG spec says to ignore relative paths
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("default sqlite path: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "autocoder", "autocoder.db"), nil
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
