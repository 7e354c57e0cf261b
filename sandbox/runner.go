package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"time"
)

// Config selects and sizes a Runner.
type Config struct {
	// Backend is "docker", "bwrap" or "auto" (docker when the daemon
	// answers, else bwrap); empty means "auto". The sandbox.backend
	// setting (AUTOCODER_SANDBOX) is resolved by internal/config.
	Backend string
	// PoolSize is the number of warm sandboxes (started, waiting for their
	// input) kept per profile. Zero means DefaultPoolSize; negative
	// disables the pool.
	PoolSize int
	// Slots bounds how many runs execute at once; zero means the number of
	// CPUs.
	Slots int
	// Profiles are the languages the runner serves (ProfilesOf the
	// languages' list); a spec names one of them.
	Profiles []Profile
	// Warm names the profiles whose warm-ups (the pool, and on bwrap the
	// Go build cache) start at New, in the background. The others warm up
	// once their first run is over, or on Warm: a server that only sees
	// Python never spends CPU on Go. A run never waits for a warm-up of
	// another profile; one that finds its pool empty starts a sandbox of
	// its own.
	Warm []string
	// PoolLimits are the limits of warm sandboxes; a run whose limits
	// differ starts a sandbox of its own. Zero fields take DefaultLimits.
	PoolLimits Limits
	// CacheDir holds the bwrap backend's pre-built Go cache; empty means a
	// directory under os.TempDir().
	CacheDir string
	// Forwarder is the host path of the egress forwarder (package
	// sandbox/forward): an autocoder executable, or sandbox/cmd/
	// egress-forward. It is mounted read-only into NetworkEgress runs,
	// with its loader and libraries when it is dynamically linked
	// (CheckForwarder); without it those runs are refused.
	Forwarder string
	// Images say where the docker backend's offline build of a missing
	// image finds Debian.
	Images ImageOptions
	Logger *slog.Logger
	// Metrics receives run durations and warm-pool hits; nil records
	// nothing.
	Metrics Metrics
	// forwarder is Forwarder checked, for the backends.
	forwarder *forwarder
	// noSeccomp runs bwrap sandboxes without their seccomp filter; only
	// the benchmark sets it, to measure what the filter costs.
	noSeccomp bool
}

// DefaultPoolSize is the warm sandboxes per profile when Config leaves it 0.
const DefaultPoolSize = 2

func (c Config) withDefaults() Config {
	if c.Backend == "" {
		c.Backend = "auto"
	}
	if c.PoolSize == 0 {
		c.PoolSize = DefaultPoolSize
	}
	if c.Slots <= 0 {
		c.Slots = runtime.NumCPU()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Metrics == nil {
		c.Metrics = noMetrics{}
	}
	return c
}

// Metrics is what the sandbox measures, by language (the spec's profile).
type Metrics interface {
	// SandboxRun is a run's time, from the start of its sandbox (or the
	// take of a warm one) to its result.
	SandboxRun(language string, took time.Duration)
	// WarmPool says whether a warm sandbox served a run.
	WarmPool(language string, hit bool)
}

type noMetrics struct{}

func (noMetrics) SandboxRun(string, time.Duration) {}
func (noMetrics) WarmPool(string, bool)            {}

// backend is a Runner without the slot limit.
type backend interface {
	Run(ctx context.Context, spec Spec) (Result, error)
	Name() string
	Close() error
	// warm starts the profile's warm-ups in the background, once; it
	// never blocks.
	warm(p Profile)
	// check says whether the backend can run sandboxes now.
	check(ctx context.Context) error
	Toolchain(ctx context.Context, profile string) (string, error)
}

// New builds a Runner for the configured backend. With "auto" it uses
// docker when the daemon answers a ping, else bwrap.
func New(ctx context.Context, cfg Config) (Runner, error) {
	cfg = cfg.withDefaults()
	if cfg.Forwarder != "" {
		fw, err := newForwarder(cfg.Forwarder)
		if err != nil {
			return nil, err
		}
		cfg.forwarder = fw
	}
	var (
		b   backend
		err error
	)
	switch cfg.Backend {
	case "docker":
		b, err = newDockerRunner(ctx, cfg)
	case "bwrap":
		b, err = newBwrapRunner(ctx, cfg)
	case "auto":
		b, err = newDockerRunner(ctx, cfg)
		if errors.Is(err, ErrUnavailable) {
			cfg.Logger.Info("sandbox: docker unavailable; trying bwrap", "err", err)
			var berr error
			b, berr = newBwrapRunner(ctx, cfg)
			if berr != nil {
				return nil, fmt.Errorf("%w: docker: %v; bwrap: %w (start a docker daemon and run scripts/build-images.sh, or install bubblewrap: apt-get install bubblewrap python3-pytest)", ErrUnavailable, err, berr)
			}
			err = nil
		}
	default:
		return nil, fmt.Errorf("%w: backend %q (want docker, bwrap or auto)", ErrUnavailable, cfg.Backend)
	}
	if err != nil {
		return nil, err
	}
	// Profiles named in Warm start their warm-ups now, in the background;
	// the others once their first run is over.
	if len(cfg.Profiles) == 0 {
		return nil, fmt.Errorf("%w: no language profiles", ErrInvalidSpec)
	}
	profiles := newProfileSet(cfg.Profiles)
	for _, name := range cfg.Warm {
		p, err := profiles.lookup(name)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.warm(p)
	}
	cfg.Logger.Info("sandbox: ready", "backend", b.Name(), "slots", cfg.Slots, "pool", cfg.PoolSize, "warm", cfg.Warm)
	return &slotted{backend: b, slots: make(chan struct{}, cfg.Slots), metrics: cfg.Metrics}, nil
}

// slotted bounds concurrent runs of a backend with a semaphore.
type slotted struct {
	backend
	slots   chan struct{}
	metrics Metrics
}

func (s *slotted) Slots() int { return cap(s.slots) }

func (s *slotted) Run(ctx context.Context, spec Spec) (Result, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return Result{}, fmt.Errorf("sandbox slot: %w", ctx.Err())
	}
	defer func() { <-s.slots }()
	start := time.Now()
	res, err := s.backend.Run(ctx, spec)
	if err == nil {
		s.metrics.SandboxRun(spec.Profile, time.Since(start))
	}
	return res, err
}

// Check says whether the backend can run sandboxes now: the docker daemon
// answers, or bwrap starts a sandbox.
func (s *slotted) Check(ctx context.Context) error { return s.backend.check(ctx) }
