package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

func TestOpenPicksBackend(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite by default", func(t *testing.T) {
		want := filepath.Join(t.TempDir(), "autocoder", "autocoder.db")
		s, err := Open(ctx, Config{SQLitePath: want})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		lite, ok := s.(*SQLite)
		if !ok {
			t.Fatalf("Open(Config{}) = %T, want *SQLite", s)
		}
		if lite.Path() != want {
			t.Fatalf("path %s, want %s", lite.Path(), want)
		}
		info, err := os.Stat(filepath.Dir(want))
		if err != nil || info.Mode().Perm() != 0o700 {
			t.Fatalf("data dir: %v, mode %v; want 0700", err, info.Mode().Perm())
		}
	})
	t.Run("postgres when a url is set", func(t *testing.T) {
		s, err := Open(ctx, Config{DatabaseURL: postgresTarget(t), SQLitePath: filepath.Join(t.TempDir(), "unused.db")})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, ok := s.(*Postgres); !ok {
			t.Fatalf("Open with a url = %T, want *Postgres", s)
		}
	})
}

func TestOpenSQLiteRejectsQueryInPath(t *testing.T) {
	if _, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "x.db?mode=ro")); err == nil {
		t.Fatal("a path with '?' opened")
	}
}

// TestCorruptBlob alters stored content behind the store's back: every read
// path must notice.
func TestCorruptBlob(t *testing.T) {
	corrupt := map[string]func(Store, string) error{
		"sqlite": func(s Store, hash string) error {
			_, err := s.(*SQLite).db.Exec(`UPDATE blobs SET data = ? WHERE hash = ?`, []byte("evil"), hash)
			return err
		},
		"postgres": func(s Store, hash string) error {
			_, err := s.(*Postgres).pool.Exec(context.Background(), `UPDATE blobs SET data = $1 WHERE hash = $2`, []byte("evil"), hash)
			return err
		},
	}
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openTarget(t, b.target(t))
			files := genFiles(5, 100, "corrupt")
			id := mustPut(t, s, files)
			hash := hashData(files[2].Data)
			if err := corrupt[b.name](s, hash); err != nil {
				t.Fatal(err)
			}
			_, errBlob := s.GetBlob(ctx, hash)
			_, errSnap := s.GetSnapshot(ctx, id)
			errVerify := Verify(ctx, s)
			for name, err := range map[string]error{"GetBlob": errBlob, "GetSnapshot": errSnap, "Verify": errVerify} {
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("%s: err = %v, want ErrCorrupt", name, err)
				}
			}
		})
	}
}

// TestMemoWritesSkipTheDiskWait checks that memos are written without
// waiting for an fsync while everything else still waits, and that the
// setting stays with memo writes.
func TestMemoWritesSkipTheDiskWait(t *testing.T) {
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "memo.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.PutMemo(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		// PRAGMA synchronous: 1 is NORMAL, 2 is FULL.
		for name, c := range map[string]struct {
			db   *sql.DB
			want int
		}{"memo": {s.memo, 1}, "store": {s.db, 2}} {
			var got int
			if err := c.db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("%s connection: synchronous = %d, want %d", name, got, c.want)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		s := openTarget(t, postgresTarget(t)).(*Postgres)
		if err := s.PutMemo(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		// Every connection of the pool: none keeps the memo's setting.
		conns := make([]*pgxpool.Conn, 0, s.pool.Config().MaxConns)
		defer func() {
			for _, c := range conns {
				c.Release()
			}
		}()
		for range cap(conns) {
			c, err := s.pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			var got string
			if err := c.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != "on" {
				t.Errorf("a pooled connection has synchronous_commit = %q after PutMemo, want on", got)
			}
		}
	})
}
