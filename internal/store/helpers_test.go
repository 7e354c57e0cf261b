package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
)

const testURLEnv = "AUTOCODER_TEST_DATABASE_URL"

// sqliteTarget returns a path for a fresh database file.
func sqliteTarget(tb testing.TB) string {
	return filepath.Join(tb.TempDir(), "store.db")
}

// postgresTarget creates an empty database for this test alone and returns
// its URL; the database is dropped at cleanup.
func postgresTarget(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(testURLEnv)
	if base == "" {
		testenv.RequireService(tb, "PostgreSQL", errors.New(testURLEnv+" is unset; run scripts/postgres.sh"))
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("parse %s: %v", testURLEnv, err)
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	name := "autocoder_t_" + hex.EncodeToString(suffix)
	admin(tb, base, "CREATE DATABASE "+name)
	tb.Cleanup(func() { dropDatabase(tb, base, name) })
	u.Path = "/" + name
	return u.String()
}

func admin(tb testing.TB, url, sql string) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatalf("connect to test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// openTarget opens a store on a target made by sqliteTarget or
// postgresTarget and closes it at cleanup.
func openTarget(tb testing.TB, target string) Lister {
	tb.Helper()
	s, err := Open(context.Background(), targetConfig(target))
	if err != nil {
		tb.Fatalf("open %s: %v", target, err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return s.(Lister)
}

func targetConfig(target string) Config {
	if u, err := url.Parse(target); err == nil && u.Scheme == "postgres" {
		return Config{DatabaseURL: target}
	}
	return Config{SQLitePath: target}
}

// backends lists the ways tests get a fresh, empty target.
var backends = []struct {
	name   string
	target func(testing.TB) string
}{
	{"sqlite", sqliteTarget},
	{"postgres", postgresTarget},
}

// forEachBackend runs a contract on every backend, its open giving two
// stores on one fresh, empty database, as two workers would hold.
func forEachBackend(t *testing.T, contract func(*testing.T, func(*testing.T) (Store, Store))) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			contract(t, func(t *testing.T) (Store, Store) {
				target := b.target(t)
				return openTarget(t, target), openTarget(t, target)
			})
		})
	}
}

// genFiles builds n source-like files of about size bytes each, spread
// over 50 directories; seed makes the content unique to one call.
func genFiles(n, size int, seed string) []workspace.File {
	files := make([]workspace.File, n)
	for i := range files {
		data := make([]byte, 0, size+64)
		for line := 0; len(data) < size; line++ {
			data = fmt.Appendf(data, "// %s file %d line %d: func f%d() int { return %d }\n", seed, i, line, line, line*i)
		}
		files[i] = workspace.File{Path: fmt.Sprintf("pkg%02d/file%04d.go", i%50, i), Data: data[:size]}
	}
	return files
}

// dropDatabase drops a test database, retrying while a background worker
// (autovacuum) still holds it; a database left behind is logged, not failed.
func dropDatabase(tb testing.TB, url, name string) {
	ctx := context.Background()
	var err error
	for range 20 {
		var conn *pgx.Conn
		if conn, err = pgx.Connect(ctx, url); err == nil {
			_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name)
			conn.Close(ctx)
		}
		if err == nil {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	tb.Logf("test database %s left behind: %v", name, err)
}
