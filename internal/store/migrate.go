package store

import (
	"embed"
	"errors"
	"fmt"
	"log/slog"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// Migrations ship inside the binary, one directory per backend. A later
// schema change is a new numbered pair of files in both directories.
//
//go:embed migrations
var migrations embed.FS

// migrateUp applies the backend's pending migrations through driver, which
// the caller has already made exclusive across processes. It closes driver.
func migrateUp(backend string, driver database.Driver) error {
	return migrateWith(backend, driver, (*migrate.Migrate).Up)
}

// migrateWith moves the backend's schema through driver as move says, and
// checks that it is left clean. It closes driver.
func migrateWith(backend string, driver database.Driver, move func(*migrate.Migrate) error) (err error) {
	src, err := iofs.New(migrations, "migrations/"+backend)
	if err != nil {
		return errors.Join(fmt.Errorf("migrations source: %w", err), driver.Close())
	}
	m, err := migrate.NewWithInstance("iofs", src, backend, driver)
	if err != nil {
		return errors.Join(fmt.Errorf("migrations: %w", err), driver.Close())
	}
	defer func() {
		// Close also closes the driver and the connection it holds.
		srcErr, dbErr := m.Close()
		if cerr := errors.Join(srcErr, dbErr); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close migrations: %w", cerr))
		}
	}()
	if err := move(m); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("migrate: %w", err)
	}
	version, dirty, err := m.Version()
	if err != nil {
		return fmt.Errorf("migration version: %w", err)
	}
	if dirty {
		return fmt.Errorf("migration %d is dirty: fix the schema by hand, then clear the flag", version)
	}
	slog.Debug("store schema ready", "backend", backend, "version", version)
	return nil
}
