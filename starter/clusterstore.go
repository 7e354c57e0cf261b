package starter

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"slices"

	"github.com/autocoder/autocoder/internal/store"
)

// sameStoreAsWorkers makes sure that a client of a cluster uses the store
// its workers read: a project uploaded to another would fail the task at
// its first step, and results would be looked for where they are not.
// With no worker polling there is nothing to compare with: a task waits
// for one, and a worker of another store fails it at once, saying why.
func (f *Factory) sameStoreAsWorkers(ctx context.Context, st store.Store) error {
	id, err := st.ID(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnavailable, err)
	}
	// Without an answer nothing is known either way: a command that needs
	// Temporal says so itself, and a task's first step is the judge.
	var stores []string
	var unnamed int
	c, err := f.TaskClient(ctx)
	if err == nil {
		stores, unnamed, err = c.WorkerStores(ctx)
	}
	if err != nil {
		slog.Debug("cannot list the workers' stores", "error", err)
		return nil
	}
	// A worker that names no store (of an older release) may read this
	// client's.
	if len(stores) == 0 || unnamed > 0 || slices.Contains(stores, id) {
		return nil
	}
	return usageError("the workers at %s read another store than this client's (%s): they would not find a task's project, nor this client its results.\n"+
		"Set %s (store.url in the configuration file) to the database the workers use; see deploy/README.md, \"Clients\"",
		f.cfg.TemporalAddress, f.storeName(), envDatabaseURL)
}

// storeName says which store this client opened, without credentials.
func (f *Factory) storeName() string {
	if f.cfg.DatabaseURL == "" {
		return "SQLite at " + f.cfg.sqlitePath()
	}
	// Host and database alone: a key=value connection string, which
	// url.Parse takes for a path, could hold the password.
	u, err := url.Parse(f.cfg.DatabaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "Postgres"
	}
	return "Postgres database " + u.Path[min(1, len(u.Path)):] + " at " + u.Host
}
