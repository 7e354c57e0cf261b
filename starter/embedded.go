package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/owner"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
)

// embedded is the local server: a Temporal server persisted to a SQLite
// file in the data dir, its Web UI, and a worker with the sandbox pools,
// all inside this process.
type embedded struct {
	server *devserver.Server
	acts   *activities.Activities // nil for a settings-less server
	stop   func()
}

// useEmbedded reports local mode: the user named no Temporal server, so
// commands use the data dir's local server.
func (f *Factory) useEmbedded() bool { return !f.cfg.addressSet }

// hostIfNeeded, in local mode, connects to the data dir's local server,
// starting it in the background when none runs. The server outlives this
// process, so the returned stop has nothing to stop.
func (f *Factory) hostIfNeeded(ctx context.Context) (stop func(), err error) {
	if f.useEmbedded() {
		if err := f.connectLocal(ctx); err != nil {
			return nil, err
		}
	}
	return func() {}, nil
}

// startEmbedded starts the local services and a worker, and points the
// factory at them. The returned stop shuts everything down in order. A
// settings-less server's worker runs workflows only (no model, no sandbox).
func (f *Factory) startEmbedded(ctx context.Context, sc sandbox.Config, settingsless bool) (*embedded, error) {
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir:            f.cfg.DataDir,
		FrontendPort:       f.cfg.devPort,
		UIPort:             f.cfg.uiPort,
		Namespace:          f.cfg.Namespace,
		SearchAttributes:   taskclient.SearchAttributes,
		Logger:             slog.Default(),
		FallBackToFreePort: true,
	})
	if errors.Is(err, devserver.ErrDataDirLocked) {
		return nil, fmt.Errorf("%w: another local server uses %s: see `autocoder dev status`", errUnavailable, f.cfg.DataDir)
	}
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
	if err := f.startMetrics(); err != nil {
		return fail(err)
	}
	c, err := f.temporalClient(ctx)
	if err != nil {
		return fail(err)
	}
	acts, closeActs, err := f.workerActivities(ctx, sc, settingsless)
	if err != nil {
		return fail(err)
	}
	opts := worker.Options{Namespace: f.cfg.Namespace, InFlightDir: f.cfg.inFlightDir(), WorkflowsOnly: settingsless}
	if opts.StoreID, err = acts.Store.ID(ctx); err != nil {
		closeActs()
		return fail(fmt.Errorf("%w: %v", errUnavailable, err))
	}
	f.instrument(acts, &opts)
	w := worker.New(c, acts, opts)
	if err := w.Start(); err != nil {
		closeActs()
		return fail(fmt.Errorf("start worker: %w", err))
	}
	stopEndpoints, err := f.serveEndpoints(c, acts)
	if err != nil {
		w.Stop()
		closeActs()
		return fail(err)
	}
	if !settingsless {
		e.acts = acts
	}
	e.stop = func() {
		stopEndpoints()
		w.Stop()
		closeActs()
		f.closeClient()
		if err := srv.Stop(); err != nil {
			slog.Warn("stop local Temporal", "error", err)
		}
	}
	return e, nil
}

// workerActivities are the local worker's activities; a settings-less
// worker runs only the local ones, which need the store alone.
func (f *Factory) workerActivities(ctx context.Context, sc sandbox.Config, settingsless bool) (*activities.Activities, func(), error) {
	if !settingsless {
		return f.Activities(ctx, sc)
	}
	st, err := f.Store(ctx)
	if err != nil {
		return nil, nil, err
	}
	return &activities.Activities{Store: st}, func() {}, nil
}

// serve runs the local server until ctx ends or, when idle is positive, it
// has been idle that long. Its address file is written once it serves and
// removed when it stops. lock is the held start lock: it is released once
// the address file is written, and held again while an idle server stops,
// so that a client never finds a server that is going away.
func (f *Factory) serve(ctx context.Context, lock *os.File, idle time.Duration, settingsless bool, ready func()) error {
	defer func() { lock.Close() }()
	// No Warm: each language warms up once first used, so a Python task on
	// a fresh server does not share the CPU with Go warm-ups.
	e, err := f.startEmbedded(ctx, sandbox.Config{Backend: f.cfg.Sandbox, Images: f.cfg.Images}, settingsless)
	if err != nil {
		return err
	}
	defer e.stop()
	pub := &published{dataDir: f.cfg.DataDir, addr: devserver.Address{
		Frontend:  f.cfg.TemporalAddress,
		UI:        e.server.UIURL(),
		Namespace: f.cfg.Namespace,
		PID:       os.Getpid(),
		Owner:     owner.ID(),
		Started:   time.Now(),
		LogFile:   f.cfg.logFile(),
		// The server's own settings: what its worker runs tasks with.
		Settings:     f.cfg.settings.Fingerprint(),
		Settingsless: settingsless,
	}}
	if err := pub.show(); err != nil {
		return fmt.Errorf("%w: %v", errUnavailable, err)
	}
	defer pub.hide()
	addr := pub.addr
	lock.Close()
	reapCtx, stopReaping := context.WithCancel(ctx)
	defer stopReaping()
	go reapEvery(reapCtx, reapInterval)
	if e.acts != nil {
		// An edit of the configuration applies to the running server, whose
		// address file then says what it runs with, for clients to compare.
		go f.watchConfig(reapCtx, e.acts, pub.setSettings)
	}
	slog.Info("local server ready", "temporal", addr.Frontend, "ui", addr.UI, "data", f.cfg.DataDir, "idle_timeout", idle,
		"settingsless", settingsless)
	ready()
	// Stopped by a signal: the start lock is held while the server stops,
	// as when it stops idle, so that a client arriving meanwhile waits for
	// the data dir to be free instead of starting a server that finds it
	// locked.
	stopping := func() error {
		lock = lockForStop(ctx, f.cfg.DataDir)
		return nil
	}
	if idle <= 0 {
		<-ctx.Done()
		return stopping()
	}
	c, err := f.temporalClient(ctx)
	if err != nil {
		return err
	}
	svc := c
	for {
		seen, err := devserver.WaitIdle(ctx, svc, f.cfg.Namespace, f.cfg.DataDir, idle)
		if err != nil {
			return stopping()
		}
		if lock, err = devserver.LockStart(ctx, f.cfg.DataDir); err != nil {
			return stopping()
		}
		pub.hide()
		if !devserver.Busy(ctx, svc, f.cfg.Namespace, f.cfg.DataDir, seen) {
			slog.Info("local server stops: idle", "idle_timeout", idle)
			return nil
		}
		if err := pub.show(); err != nil {
			return fmt.Errorf("%w: %v", errUnavailable, err)
		}
		lock.Close()
	}
}

// published is the server's address file, there while the server takes
// clients, with the settings its worker runs (which an edit of the
// configuration may change); every write goes through it, so that none
// brings back a file the server took away, or older settings.
type published struct {
	mu      sync.Mutex
	dataDir string
	addr    devserver.Address
	hidden  bool
}

// show writes the address file.
func (p *published) show() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hidden = false
	return devserver.WriteAddress(p.dataDir, p.addr)
}

// hide removes it: the server is about to stop, or may.
func (p *published) hide() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hidden = true
	if err := devserver.RemoveAddress(p.dataDir); err != nil {
		slog.Warn("remove address file", "error", err)
	}
}

// setSettings records what the worker now runs with, in the file too
// unless it is hidden.
func (p *published) setSettings(settings map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.addr.Settings = settings
	if p.hidden {
		return
	}
	if err := devserver.WriteAddress(p.dataDir, p.addr); err != nil {
		slog.Warn("write address file", "error", err)
	}
}

// stopLockWait bounds how long a server stopping on a signal waits for
// the start lock: a client holds it only briefly, or a server starting
// that will find the data dir in use and exit.
const stopLockWait = 10 * time.Second

// lockForStop takes the start lock for a server that stops because ctx
// ended, or returns nil (the server stops anyway) when it does not come.
func lockForStop(ctx context.Context, dataDir string) *os.File {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopLockWait)
	defer cancel()
	lock, err := devserver.LockStart(ctx, dataDir)
	if err != nil {
		slog.Warn("stop without the start lock", "error", err)
		return nil
	}
	return lock
}

// DevOptions are dev's arguments.
type DevOptions struct {
	Background  bool
	IdleTimeout time.Duration
	// Settingsless: started by a command that only reads (with Background).
	Settingsless bool
}

func NewCmdDev(f *Factory, runF func(*DevOptions) error) *cobra.Command {
	var o DevOptions
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run the local server (Temporal, Web UI, worker) in the foreground; `dev status|stop` for the background one",
		Long: "In local mode (no TEMPORAL_ADDRESS) every command uses the data dir's local server and starts it\n" +
			"in the background when none runs; it stops by itself when idle. `dev` runs it in the foreground\n" +
			"instead, until Ctrl-C.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if f.cfg.addressSet {
				return usageError("dev starts its own Temporal, and temporal.address is set (%s): remove it", f.cfg.settings.Get("temporal.address").Source)
			}
			if o.IdleTimeout < 0 {
				return usageError("--idle-timeout must not be negative")
			}
			if runF != nil {
				return runF(&o)
			}
			idle := o.IdleTimeout
			if o.Background {
				lock, err := devserver.AdoptStartLock(f.cfg.DataDir, startLockFD)
				if err != nil {
					return fmt.Errorf("%w: %v", errUnavailable, err)
				}
				if !cmd.Flags().Changed("idle-timeout") {
					idle = f.cfg.settings.Duration("server.idle_timeout")
				}
				return f.serve(ctx, lock, idle, o.Settingsless, func() {})
			}
			lock, err := devserver.LockStart(ctx, f.cfg.DataDir)
			if err != nil {
				return fmt.Errorf("%w: %v", errUnavailable, err)
			}
			if a, err := devserver.ReadAddress(f.cfg.DataDir); err == nil {
				lock.Close()
				return fmt.Errorf("%w: a local server already runs for %s (pid %d, Temporal at %s); stop it with `autocoder dev stop`",
					errUnavailable, f.cfg.DataDir, a.PID, a.Frontend)
			}
			return f.serve(ctx, lock, idle, false, func() {
				fmt.Fprintf(f.IO.Out, "Temporal: %s (namespace %s)\nWeb UI:   %s\nData:     %s\nLog:      %s\nPress Ctrl-C to stop.\n",
					f.cfg.TemporalAddress, f.cfg.Namespace, f.cfg.UIURL, f.cfg.DataDir, f.cfg.logFile())
			})
		},
	}
	cmd.Flags().BoolVar(&o.Background, "background", false, "run as the background server a client started")
	_ = cmd.Flags().MarkHidden("background")
	cmd.Flags().BoolVar(&o.Settingsless, "settingsless", false, "with --background: run no activity, for a command that only reads")
	_ = cmd.Flags().MarkHidden("settingsless")
	cmd.Flags().DurationVar(&o.IdleTimeout, "idle-timeout", 0,
		"stop after this long with no task running or waiting and no client (0: never; the background server uses server.idle_timeout or "+envIdleTimeout+", default 5m)")
	cmd.AddCommand(newDevStatusCmd(f), newDevStopCmd(f))
	return cmd
}
