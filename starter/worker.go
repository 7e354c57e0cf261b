package starter

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/mcptools"
	"github.com/autocoder/autocoder/internal/versions"
	"github.com/autocoder/autocoder/sandbox"
	"github.com/autocoder/autocoder/worker"
)

// WorkerOptions are worker's arguments.
type WorkerOptions struct {
	Worker worker.Options
	Pool   int
	Slots  int
	Warm   []string
}

func NewCmdWorker(f *Factory, runF func(*WorkerOptions) error) *cobra.Command {
	var o WorkerOptions
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run a worker that executes coding tasks (stops gracefully on SIGINT/SIGTERM)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(&o)
			}
			ctx := cmd.Context()
			if err := f.startMetrics(); err != nil {
				return err
			}
			c, err := f.temporalClient(ctx)
			if err != nil {
				return err
			}
			f.worker = true
			acts, closeActs, err := f.Activities(ctx, sandbox.Config{Backend: f.cfg.Sandbox, Images: f.cfg.Images, PoolSize: o.Pool, Slots: o.Slots, Warm: o.Warm})
			if err != nil {
				return err
			}
			defer closeActs()
			// The webhooks of a file the worker is given (--config) are told
			// of every task it runs, as a cluster's operator sets them once
			// for all its clients; never those of a file it found, which
			// may be a person's own, nor the local server's, which are its
			// clients'.
			if f.configFile != "" {
				targets, err := f.cfg.settings.Notifications()
				if err != nil {
					return usageError("%v", err)
				}
				acts.WorkerNotify = activities.WorkerNotify{Targets: targets, Link: f.cfg.workflowURL}
				for _, t := range targets {
					slog.Info("this worker tells a webhook of every task", "webhook", t.Redacted(), "events", t.Events)
				}
			}
			o.Worker.Namespace, o.Worker.InFlightDir = f.cfg.Namespace, f.cfg.inFlightDir()
			if o.Worker.StoreID, err = acts.Store.ID(ctx); err != nil {
				return fmt.Errorf("%w: %v", errUnavailable, err)
			}
			f.instrument(acts, &o.Worker)
			go f.watchConfig(ctx, acts, nil)
			stopEndpoints, err := f.serveEndpoints(c, acts)
			if err != nil {
				return err
			}
			defer stopEndpoints()
			return worker.Run(ctx, c, acts, o.Worker)
		},
	}
	cmd.Flags().IntVar(&o.Worker.MaxConcurrentActivities, "max-activities", 0, "activities run at once (0: SDK default)")
	// Read through the configuration (worker.metrics_address), like the
	// local server, which has no flag for it.
	cmd.Flags().String("metrics", "", "serve /metrics, /healthz and /readyz on this address (host:port)")
	cmd.Flags().IntVar(&o.Pool, "sandbox-pool", 0, "warm sandboxes kept per language (0: 2, negative: none)")
	cmd.Flags().IntVar(&o.Slots, "sandbox-slots", 0, "sandbox runs at once (0: number of CPUs)")
	// Warming a language fills its toolchain volumes and starts its pool:
	// seconds of copying per image, so only the languages named do it at
	// start; the others warm up once their first run is over.
	cmd.Flags().StringSliceVar(&o.Warm, "sandbox-warm", nil, "languages whose sandboxes warm up at start (of "+languages.List()+"); the others on first use")
	return cmd
}

// egressForwarder is the program sandbox runs reach the egress proxy
// through: sandbox.forwarder when it names one (the sandbox refuses it
// if it cannot serve), else this executable, which is the forwarder when
// run under that name (main). "" when this executable cannot serve, which
// turns dependency installs off: it is no Linux executable of this
// machine, its file is gone (deleted or moved since it started), the
// sandbox's user may not read it (installed without o+r), or it is
// dynamically linked and its loader or a library it needs is not on this
// host (a worker copied from another system).
//
// "none" turns installs off, and so does a docker daemon on another
// machine (DOCKER_HOST over TCP or SSH), which cannot mount this host's
// proxy socket or forwarder into a sandbox.
func (f *Factory) egressForwarder(backend string) string {
	fwd := f.cfg.settings.String("sandbox.forwarder")
	if fwd == "none" {
		slog.Info("dependency installs are off: sandbox.forwarder is none")
		return ""
	}
	if backend != "bwrap" && !sandbox.LocalDaemon() {
		slog.Warn("dependency installs are off: the docker daemon (DOCKER_HOST) is not on this machine, so it cannot mount the egress proxy into a sandbox; " +
			"run the worker on the daemon's machine, or use the bwrap backend")
		return ""
	}
	if fwd != "" {
		return fwd
	}
	exe, err := f.Executable()
	if err == nil {
		err = sandbox.CheckForwarder(exe)
	}
	if err != nil {
		slog.Warn("dependency installs are off: this executable cannot be the sandboxes' egress forwarder; "+
			"set sandbox.forwarder to one (CGO_ENABLED=0 go build ./sandbox/cmd/egress-forward)", "executable", exe, "error", err)
		return ""
	}
	return exe
}

// depsIndexes are the registries' indexes installs use, by language: the
// configuration's (registries.index), else the one the ecosystem's own
// configuration on this machine names (go env GOPROXY).
func depsIndexes(ctx context.Context, indexes map[string]string) map[string]string {
	for _, l := range languages.All() {
		if _, ok := indexes[l.Name]; ok || l.Deps.IndexVar == "" || len(l.Deps.Versions.Configured) == 0 {
			continue
		}
		if v := versions.Configured(ctx, l.Deps.Versions.Configured); v != "" {
			indexes[l.Name] = v
		}
	}
	return indexes
}

// depsHostEnv are the variables of each language's installs that the
// ecosystem's own configuration on this machine sets (go env GONOSUMDB).
func depsHostEnv(ctx context.Context) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, l := range languages.All() {
		for k, cmd := range l.Deps.HostEnv {
			if v := versions.Configured(ctx, cmd); v != "" {
				if out[l.Name] == nil {
					out[l.Name] = map[string]string{}
				}
				out[l.Name][k] = v
			}
		}
	}
	return out
}

// Activities assembles the activities' dependencies: the store, a sandbox
// (after reaping what a crashed worker left behind) and the model factory.
func (f *Factory) Activities(ctx context.Context, sc sandbox.Config) (*activities.Activities, func(), error) {
	st, err := f.Store(ctx)
	if err != nil {
		return nil, nil, err
	}
	s := f.cfg.settings
	if _, err := s.DefaultModel(); err != nil {
		slog.Warn("no default model: tasks must name one with --model", "error", err)
	}
	// The keys are read here, where they are used: an api_key_cmd runs in
	// the worker, never in a client, and no key reaches a workflow's history.
	env, err := s.ModelEnv(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: model keys: %v", errUsage, err)
	}
	// Containers a crashed worker left behind are removed before new ones start.
	if n, err := sandbox.Reap(ctx); err != nil {
		slog.Warn("reap leaked sandbox containers", "error", err)
	} else if n > 0 {
		slog.Info("reaped leaked sandbox containers", "count", n)
	}
	sc.Profiles = sandbox.ProfilesOf(languages.All())
	if f.metrics != nil {
		sc.Metrics = f.metrics
	}
	sc.Forwarder = f.egressForwarder(sc.Backend)
	shared := worker.SharedDir(s.String("sandbox.shared_dir"))
	if shared != "" {
		if err := shared.Check(); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", errUnavailable, err)
		}
		if sc.Forwarder != "" {
			// A dynamic one would need its loader and libraries, which
			// the daemon would look for on its own host.
			if static, err := sandbox.StaticForwarder(sc.Forwarder); err != nil || !static {
				return nil, nil, fmt.Errorf("%w: sandbox.shared_dir needs a static egress forwarder, and %s is not one (%v): set sandbox.forwarder to the one CGO_ENABLED=0 go build ./sandbox/cmd/egress-forward builds", errUnavailable, sc.Forwarder, err)
			}
			if sc.Forwarder, err = shared.Copy(sc.Forwarder, "egress-forward"); err != nil {
				return nil, nil, fmt.Errorf("%w: %v", errUnavailable, err)
			}
		}
	}
	sb, err := sandbox.New(ctx, sc)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: sandbox: %v", errUnavailable, err)
	}
	acts := &activities.Activities{Store: st, Sandbox: sb, Models: worker.Models(env), MinFreeSpace: s.Bytes("worker.min_free_space"),
		DepsIndexes: depsIndexes(ctx, s.RegistryIndexes()), DepsHostEnv: depsHostEnv(ctx), VersionsTTL: s.Duration("versions.ttl"), Prices: s.Prices(),
		DepsMaxSize: s.Bytes("deps.max_size"), SetupTimeout: s.Duration("worker.setup_timeout")}
	if shared != "" {
		acts.DepsDir = shared.DepsDir()
	}
	// Installs reach the network through the proxy and the forwarder in
	// the sandbox: without the forwarder no run could reach the proxy, so
	// none is started and no dependency is installed.
	var eg *worker.Egress
	if sc.Forwarder != "" {
		if eg, err = worker.StartEgress(s.Egress(), "127.0.0.1:0"); err != nil {
			sb.Close()
			return nil, nil, fmt.Errorf("%w: %v", errUnavailable, err)
		}
		if ca := s.String("egress.ca_bundle"); ca != "" {
			eg.CABundle = ca
		}
		if shared != "" {
			eg.Dir = string(shared)
			if n := worker.RemoveStaleRoutes(eg.Dir); n > 0 {
				slog.Info("removed the egress routes of workers that died", "count", n)
			}
			if eg.CABundle != "" {
				if eg.CABundle, err = shared.Copy(eg.CABundle, "ca-bundle"); err != nil {
					eg.Close()
					sb.Close()
					return nil, nil, fmt.Errorf("%w: %v", errUnavailable, err)
				}
			}
		}
		acts.Egress = eg.Routes()
	}
	closeEgress := func() {
		if eg == nil {
			return
		}
		if err := eg.Close(); err != nil {
			slog.Warn("close egress proxy", "error", err)
		}
	}
	// Their secrets are read here, on the worker, like the model keys.
	servers, err := s.MCPServers()
	if err != nil {
		closeEgress()
		sb.Close()
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	// A pool even with none: an edited configuration may add some
	// (watchConfig).
	pool := mcptools.NewPool(servers, slog.Default())
	acts.MCP = pool
	return acts, func() {
		if err := pool.Close(); err != nil {
			slog.Warn("close MCP sessions", "error", err)
		}
		closeEgress()
		if err := sb.Close(); err != nil {
			slog.Warn("close sandbox", "error", err)
		}
	}, nil
}
