package starter

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
)

// embedded is the local mode: a Temporal server persisted to a SQLite file
// in the data dir, its Web UI, and a worker, all inside this process.
type embedded struct {
	server *devserver.Server
	stop   func()
}

// useEmbedded decides whether a command that can host the services should:
// only when the user named no Temporal server and none answers locally.
func (f *factory) useEmbedded() bool {
	if f.cfg.addressSet {
		return false
	}
	conn, err := net.DialTimeout("tcp", f.cfg.TemporalAddress, 500*time.Millisecond)
	if err != nil {
		return true
	}
	conn.Close()
	return false
}

// startEmbedded starts the local services and a worker, and points the
// factory at them. The returned stop shuts everything down in order.
func (f *factory) startEmbedded(ctx context.Context, sc sandbox.Config) (*embedded, error) {
	fmt.Fprintf(f.stderr, "starting local Temporal (data in %s)…\n", f.cfg.DataDir)
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir:          f.cfg.DataDir,
		FrontendPort:     f.cfg.devPort,
		UIPort:           f.cfg.uiPort,
		Namespace:        f.cfg.Namespace,
		SearchAttributes: worker.SearchAttributes,
		Logger:           slog.New(slog.NewTextHandler(f.stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: start local Temporal: %v", errUnavailable, err)
	}
	f.cfg.TemporalAddress = srv.FrontendAddress()
	f.cfg.Namespace = srv.Namespace()
	if ui := srv.UIURL(); ui != "" {
		f.cfg.UIURL = ui
	}
	f.local = true
	e := &embedded{server: srv}
	fail := func(err error) (*embedded, error) {
		if stopErr := srv.Stop(); stopErr != nil {
			slog.Warn("stop local Temporal", "error", stopErr)
		}
		return nil, err
	}
	c, err := f.Client(ctx)
	if err != nil {
		return fail(err)
	}
	acts, closeActs, err := f.Activities(ctx, sc)
	if err != nil {
		return fail(err)
	}
	w := worker.New(c, acts, worker.Options{Namespace: f.cfg.Namespace, InFlightDir: f.cfg.inFlightDir()})
	if err := w.Start(); err != nil {
		closeActs()
		return fail(fmt.Errorf("start worker: %w", err))
	}
	e.stop = func() {
		w.Stop()
		closeActs()
		f.closeClient()
		if err := srv.Stop(); err != nil {
			slog.Warn("stop local Temporal", "error", err)
		}
	}
	return e, nil
}

// hostIfNeeded starts the embedded services when useEmbedded says so; the
// returned stop is never nil.
func (f *factory) hostIfNeeded(ctx context.Context) (stop func(), err error) {
	if !f.useEmbedded() {
		return func() {}, nil
	}
	e, err := f.startEmbedded(ctx, sandbox.Config{Backend: f.cfg.Sandbox})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f.stderr, "local Temporal at %s, Web UI at %s\n", f.cfg.TemporalAddress, f.cfg.UIURL)
	return e.stop, nil
}

func newDevCmd(f *factory) *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Run the local services (Temporal, Web UI, worker) for tasks started from other terminals",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if f.cfg.addressSet {
				return usageError("dev starts its own Temporal: unset %s", envTemporalAddress)
			}
			if !f.useEmbedded() {
				return fmt.Errorf("%w: something already listens on %s (another `autocoder dev`?); set %s to use it",
					errUnavailable, f.cfg.TemporalAddress, envTemporalAddress)
			}
			e, err := f.startEmbedded(ctx, sandbox.Config{Backend: f.cfg.Sandbox})
			if err != nil {
				return err
			}
			defer e.stop()
			fmt.Fprintf(f.stdout, "Temporal: %s (namespace %s)\nWeb UI:   %s\nData:     %s\nPress Ctrl-C to stop.\n",
				f.cfg.TemporalAddress, f.cfg.Namespace, f.cfg.UIURL, f.cfg.DataDir)
			<-ctx.Done()
			return nil
		},
	}
}

func portFromEnv(key string, def int) int {
	v := envOr(key, "")
	if v == "" {
		return def
	}
	p, err := strconv.Atoi(v)
	if err != nil || p < 0 || p > 65535 {
		slog.Warn("ignoring invalid port", "variable", key, "value", v)
		return def
	}
	return p
}
