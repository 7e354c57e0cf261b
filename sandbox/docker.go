package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/owner"
)

// Labels and names that mark the containers of this package.
const (
	labelSandbox = "autocoder.sandbox"
	labelBackend = "autocoder.sandbox.backend"
	labelProfile = "autocoder.sandbox.profile"
	labelOwner   = "autocoder.sandbox.owner"
	labelRunner  = "autocoder.sandbox.runner" // one Runner of the owner process
	namePrefix   = "autocoder-sbx-"
	// foreignReapAge is how old a container of another host must be before
	// Reap takes it for leaked; its owner's liveness cannot be checked.
	foreignReapAge = 24 * time.Hour
	// reapEvery is how often a live runner removes the containers of dead
	// owners on its host: a process killed outright cannot remove its own.
	reapEvery = 5 * time.Second
	shmBytes  = 64 << 20
)

// dockerAPI is what the docker backend needs of the engine client.
type dockerAPI interface {
	ContainerCreate(ctx context.Context, options client.ContainerCreateOptions) (client.ContainerCreateResult, error)
	ContainerAttach(ctx context.Context, id string, options client.ContainerAttachOptions) (client.ContainerAttachResult, error)
	ContainerStart(ctx context.Context, id string, options client.ContainerStartOptions) (client.ContainerStartResult, error)
	ContainerKill(ctx context.Context, id string, options client.ContainerKillOptions) (client.ContainerKillResult, error)
	ContainerInspect(ctx context.Context, id string, options client.ContainerInspectOptions) (client.ContainerInspectResult, error)
	ContainerWait(ctx context.Context, id string, options client.ContainerWaitOptions) client.ContainerWaitResult
	ContainerRemove(ctx context.Context, id string, options client.ContainerRemoveOptions) (client.ContainerRemoveResult, error)
	ContainerList(ctx context.Context, options client.ContainerListOptions) (client.ContainerListResult, error)
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	VolumeCreate(ctx context.Context, options client.VolumeCreateOptions) (client.VolumeCreateResult, error)
	VolumeInspect(ctx context.Context, volumeID string, options client.VolumeInspectOptions) (client.VolumeInspectResult, error)
	VolumeRemove(ctx context.Context, volumeID string, options client.VolumeRemoveOptions) (client.VolumeRemoveResult, error)
	VolumeList(ctx context.Context, options client.VolumeListOptions) (client.VolumeListResult, error)
	Ping(ctx context.Context, options client.PingOptions) (client.PingResult, error)
	Info(ctx context.Context, options client.InfoOptions) (client.SystemInfoResult, error)
	Close() error
}

// newDockerClient connects to the engine named by DOCKER_HOST (or the
// default socket), negotiating the API version: old daemons speak 1.41.
func newDockerClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("docker ping: %w", err)
	}
	return cli, nil
}

// box is one created, attached and started container waiting for its
// input on stdin.
type box struct {
	id      string
	conn    client.HijackedResponse
	created time.Time
}

type dockerRunner struct {
	cli      dockerAPI
	log      *slog.Logger
	metrics  Metrics
	owner    string
	id       string // labelRunner value: tells this runner's containers from its siblings'
	pools    map[poolKey]*warmPool[*box]
	limits   Limits                   // of the pools' containers
	deps     depsPools[poolKey, *box] // warm containers for runs over an install
	poolSize int                      // Config.PoolSize
	images   *imageBuilder
	toolsMu  sync.Mutex
	tools    map[string]*toolchain // toolchain volumes by image, filled on first use
	profiles profileSet
	forward  *forwarder     // Config.Forwarder
	bg       sync.WaitGroup // pending removals and volume fills
	closed   atomic.Bool
	ctx      context.Context // ends at Close: stops volume fills
	cancel   context.CancelFunc
	stop     chan struct{} // ends the reaper
	reaped   chan struct{} // closed when the reaper has ended
}

// toolchain is the toolchain volumes of one image: filled in the
// background when its profile is first used, since the first fill copies
// the image's toolchain; until then sandboxes read the image's own files.
type toolchain struct {
	once   sync.Once
	begun  atomic.Bool   // the fill has started
	done   chan struct{} // closed once the fill has ended
	mounts []mount.Mount // set before done is closed; nil if the fill failed
}

func newDockerRunner(ctx context.Context, cfg Config) (*dockerRunner, error) {
	cli, err := newDockerClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	d := &dockerRunner{cli: cli, log: cfg.Logger, metrics: cfg.Metrics, owner: owner.ID(), id: runnerID(), pools: map[poolKey]*warmPool[*box]{},
		limits: cfg.PoolLimits.withDefaults(), poolSize: cfg.PoolSize, images: newImageBuilder(cli, cfg.Logger, cfg.Images), tools: map[string]*toolchain{},
		stop: make(chan struct{}), reaped: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	// Images are checked now, for every profile: a missing one is
	// reported at start and built on its language's first run. Its
	// language has no warm pool.
	d.profiles = newProfileSet(cfg.Profiles)
	d.forward = cfg.forwarder
	d.warnSlowStorage(ctx)
	for _, p := range cfg.Profiles {
		if err := d.checkImage(ctx, p.Image); err != nil {
			if !errors.Is(err, ErrImageMissing) {
				cli.Close()
				return nil, err
			}
			d.log.Warn("sandbox: image missing; it is built on its language's first run", "profile", p.Name, "image", p.Image)
			continue
		}
		d.images.markPresent(p.Image)
		if cfg.PoolSize > 0 {
			d.pools[newPoolKey(p, p.Image, d.limits)] = newWarmPool(p.Name, cfg.PoolSize, d.log, d.warmLauncher(p, d.limits), d.discard)
		}
	}
	go d.reapLoop()
	return d, nil
}

// lookupDrivers are storage drivers that serve a container's root file
// system from a user-space process: every path lookup in a sandbox (each
// absolute path starts at that root, toolchain volumes or not) is a round
// trip to it.
var lookupDrivers = map[string]bool{"fuse-overlayfs": true}

// warnSlowStorage tells the person when the daemon's storage driver makes
// every sandbox slow, and what avoids it.
func (d *dockerRunner) warnSlowStorage(ctx context.Context) {
	info, err := d.cli.Info(ctx, client.InfoOptions{})
	if err != nil || !lookupDrivers[info.Info.Driver] {
		return
	}
	d.log.Warn("sandbox: the docker daemon's storage driver looks up every path in a sandbox through a user-space process; "+
		"tests that open many files (Python imports, Node modules, Go builds) run up to twice as slow as on overlay2 or with the bwrap backend",
		"driver", info.Info.Driver)
}

// check pings the daemon.
func (d *dockerRunner) check(ctx context.Context) error {
	if d.closed.Load() {
		return ErrClosed
	}
	if _, err := d.cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("docker ping: %w", err)
	}
	return nil
}

// warm fills the profile's toolchain volumes, once, and its pool.
func (d *dockerRunner) warm(p Profile) {
	if d.closed.Load() {
		return
	}
	if tc := d.toolchainOf(p.Image); tc != nil {
		tc.once.Do(func() {
			tc.begun.Store(true)
			d.bg.Add(1)
			go func() {
				defer d.bg.Done()
				defer close(tc.done)
				// Without the volumes sandboxes still work, only slower.
				m, err := d.toolchainMounts(d.ctx, p, p.Image)
				if err != nil {
					d.log.Warn("sandbox: toolchain volumes unavailable; the image's own files serve", "profile", p.Name, "err", err)
					return
				}
				tc.mounts = m
			}()
		})
	}
	if pl := d.pools[newPoolKey(p, p.Image, d.limits)]; pl != nil {
		pl.replenish()
	}
}

// toolchainOf returns the toolchain volumes of an image, made on first
// ask; nil while the image is not known to exist, since an image built on
// first use gets its volumes only then.
func (d *dockerRunner) toolchainOf(image string) *toolchain {
	d.toolsMu.Lock()
	defer d.toolsMu.Unlock()
	if tc := d.tools[image]; tc != nil {
		return tc
	}
	if !d.images.has(image) {
		return nil
	}
	tc := &toolchain{done: make(chan struct{})}
	d.tools[image] = tc
	return tc
}

// mounts returns the image's toolchain volumes if they are ready; a run
// does not wait for them.
func (d *dockerRunner) mounts(image string) []mount.Mount {
	tc := d.toolchainOf(image)
	if tc == nil {
		return nil
	}
	select {
	case <-tc.done:
		return tc.mounts
	default:
		return nil
	}
}

// reapLoop removes, every reapEvery, the containers whose owner on this
// host is dead.
func (d *dockerRunner) reapLoop() {
	defer close(d.reaped)
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if _, err := reapContainers(ctx, d.cli, d.log); err != nil {
			d.log.Warn("sandbox: reaping leaked containers failed", "err", err)
		}
		cancel()
	}
}

func (d *dockerRunner) Name() string { return "docker" }

func (d *dockerRunner) checkImage(ctx context.Context, image string) error {
	if _, err := d.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("%w: %s", ErrImageMissing, image)
		}
		return fmt.Errorf("image inspect %s: %w", image, err)
	}
	return nil
}

// Run takes a warm container when one matches, else starts a cold one.
func (d *dockerRunner) Run(ctx context.Context, spec Spec) (Result, error) {
	if d.closed.Load() {
		return Result{}, ErrClosed
	}
	j, err := prepare(d.profiles, d.forward, spec)
	if err != nil {
		return Result{}, err
	}
	// Warm-ups start once the run is over: they would compete with it for
	// the CPU.
	defer d.warm(j.profile)
	key := newPoolKey(j.profile, j.image, j.limits)
	take, dk, overDeps := warmSource(j, key, d.pools[key], &d.deps)
	res, err := d.run(ctx, j, take)
	if overDeps && err == nil {
		d.warmDeps(j, dk)
	}
	return res, err
}

// run runs the job in a warm container from take, if it has one that
// works, else in a new one.
func (d *dockerRunner) run(ctx context.Context, j job, take func() (*box, bool)) (Result, error) {
	if b, ok := take(); ok {
		res, err := d.exec(ctx, b, j)
		if !errors.Is(err, errStale) {
			d.metrics.WarmPool(j.profile.Name, true)
			return res, err
		}
		d.log.Warn("sandbox: warm container was unusable; running cold", "id", short(b.id), "err", err)
	}
	d.metrics.WarmPool(j.profile.Name, false)
	if err := d.ensureImage(ctx, j); err != nil {
		return Result{}, err
	}
	b, err := d.launch(ctx, j.profile, j.image, j.limits, false, j.route, j.extra)
	if err != nil {
		return Result{}, err
	}
	return d.exec(ctx, b, j)
}

// warmDeps refills the warm container of a run's install, once a run over
// it has worked. A launch that fails retires the pool: the next run over
// the install makes another.
func (d *dockerRunner) warmDeps(j job, k depsKey[poolKey]) {
	if d.closed.Load() || d.poolSize <= 0 {
		return
	}
	// Not the job itself: it holds the run's input.
	name, p, image, lim, x := j.profile.Name+" (deps)", j.profile, j.image, j.limits, j.extra
	d.deps.replenish(k, &d.bg, func() *warmPool[*box] {
		return newWarmPool(name, 1, d.log, overInstall(k, func(ctx context.Context) (*box, error) {
			return d.launch(ctx, p, image, lim, false, nil, x)
		}, d.discard), d.discard)
	})
}

// allPools lists the warm pools: the profiles' and the installs'.
func (d *dockerRunner) allPools() []*warmPool[*box] {
	pools := slices.Collect(maps.Values(d.pools))
	return append(pools, d.deps.all()...)
}

// Toolchain is the ID of the profile's image.
func (d *dockerRunner) Toolchain(ctx context.Context, profile string) (string, error) {
	p, err := d.profiles.lookup(profile)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if err := d.images.ensure(ctx, d.ctx, p); err != nil {
		return "", err
	}
	ins, err := d.cli.ImageInspect(ctx, p.Image)
	if err != nil {
		return "", fmt.Errorf("image inspect %s: %w", p.Image, err)
	}
	return ins.ID, nil
}

// ensureImage builds the profile's image if it is missing, on its first
// run; concurrent first runs wait for one build. An image a spec names
// instead of the profile's is not the recipe's to build.
func (d *dockerRunner) ensureImage(ctx context.Context, j job) error {
	if j.image != j.profile.Image {
		return nil
	}
	return d.images.ensure(ctx, d.ctx, j.profile)
}

// warmLauncher starts a pool's containers. The first runs the profile's
// Prewarm, which loads the toolchain's files into the host's caches; later
// ones skip it, because the toolchain volumes serve the same files from
// those caches and the runs in between keep them warm. Without the volumes
// each container reads the image through its own storage-driver mount, so
// each prewarms. A prewarm costs as much CPU as a test run, and a refill
// happens just as its run's result goes back to the workflow.
func (d *dockerRunner) warmLauncher(p Profile, lim Limits) func(context.Context) (*box, error) {
	warmed := false // the pool launches one container at a time
	return func(ctx context.Context) (*box, error) {
		// Warm containers are worth their volumes: wait for the fill.
		if tc := d.toolchainOf(p.Image); tc != nil {
			select {
			case <-tc.done:
			case <-ctx.Done():
				return nil, fmt.Errorf("toolchain volumes: %w", ctx.Err())
			}
		}
		prewarm := !warmed || len(d.mounts(p.Image)) == 0
		b, err := d.launch(ctx, p, p.Image, lim, prewarm, nil, extra{})
		if err == nil && prewarm {
			warmed = true
		}
		return b, err
	}
}

// errStale reports a warm container that died before it got its input.
var errStale = errors.New("warm container not accepting input")

// launch creates, attaches and starts a container that waits for its input.
// Attaching before start guarantees no output is lost. With prewarm the
// container runs the profile's Prewarm first. With a route it reaches the
// egress proxy.
func (d *dockerRunner) launch(ctx context.Context, p Profile, image string, lim Limits, prewarm bool, rt *route, x extra) (_ *box, err error) {
	cfg, host := d.containerConfig(p, image, lim, prewarm, rt, x)
	name := namePrefix + p.Name + "-" + randomHex(6)
	created, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host, Name: name})
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("%w: %s", ErrImageMissing, image)
		}
		return nil, fmt.Errorf("container create: %w", err)
	}
	b := &box{id: created.ID, created: time.Now()}
	defer func() {
		if err != nil {
			d.discard(b)
		}
	}()
	att, err := d.cli.ContainerAttach(ctx, b.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("container attach: %w", err)
	}
	b.conn = att.HijackedResponse
	if _, err := d.cli.ContainerStart(ctx, b.id, client.ContainerStartOptions{}); err != nil {
		return nil, fmt.Errorf("container start: %w", err)
	}
	if err := awaitReady(ctx, b); err != nil {
		return nil, err
	}
	return b, nil
}

// readyMarker is the first thing a container writes: to stderr, once it
// waits for its input.
const readyMarker = "autocoder-sandbox: ready"

// awaitReady reads the container's first output frame and checks it is the
// ready marker, so a container that died while starting never serves a run.
func awaitReady(ctx context.Context, b *box) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = b.conn.Conn.SetReadDeadline(dl)
		defer b.conn.Conn.SetReadDeadline(time.Time{})
	}
	var hdr [8]byte
	if _, err := io.ReadFull(b.conn.Reader, hdr[:]); err != nil {
		return fmt.Errorf("container ready: %w", err)
	}
	size := binary.BigEndian.Uint32(hdr[4:])
	want := readyMarker + "\n"
	if stdcopy.StdType(hdr[0]) != stdcopy.Stderr || size != uint32(len(want)) {
		return fmt.Errorf("container ready: unexpected frame (stream %d, %d bytes)", hdr[0], size)
	}
	got := make([]byte, size)
	if _, err := io.ReadFull(b.conn.Reader, got); err != nil {
		return fmt.Errorf("container ready: %w", err)
	}
	if string(got) != want {
		return fmt.Errorf("container ready: unexpected output %q", got)
	}
	return nil
}

func (d *dockerRunner) containerConfig(p Profile, image string, lim Limits, prewarm bool, rt *route, x extra) (*container.Config, *container.HostConfig) {
	warmup := ""
	if prewarm {
		warmup = p.Prewarm
	}
	init := true
	pids := lim.Pids
	tmpfs := func(size int64) string {
		// exec: go test runs the binaries it builds in /tmp.
		return fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,mode=1777", size)
	}
	// "watch" ties the container to this process's attach stream, so that
	// it dies with the process.
	cfg := &container.Config{
		Image:        image,
		User:         fmt.Sprintf("%d:%d", sandboxUID, sandboxUID),
		Env:          p.environ(imagePath),
		WorkingDir:   workDir,
		Entrypoint:   []string{"/bin/sh", "-c", entryScript, "sbx", x.seeds(p), warmup, readyMarker, "watch"},
		Hostname:     "sandbox",
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		StdinOnce:    true,
		Labels: map[string]string{
			labelSandbox: "1",
			labelBackend: "docker",
			labelProfile: p.Name,
			labelOwner:   d.owner,
			labelRunner:  d.id,
		},
	}
	// The network is "none": a loopback only. The daemon writes /etc/hosts
	// (localhost, which tests dial, and the sandbox's own name, as bwrap's
	// has them) and a resolv.conf, naming the loopback rather than the
	// host's resolvers and search domains.
	host := &container.HostConfig{
		NetworkMode:    "none",
		DNS:            []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1})},
		DNSSearch:      []string{"."},
		ExtraHosts:     []string{"sandbox:127.0.0.1"},
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		IpcMode:        "private",
		ShmSize:        shmBytes,
		Init:           &init,
		// Output goes only to the attached stream; a log driver would write
		// a flood of it to the daemon's disk.
		LogConfig: container.LogConfig{Type: "none"},
		Tmpfs:     map[string]string{workDir: tmpfs(lim.WorkdirBytes), tmpDir: tmpfs(lim.TmpBytes)},
		Mounts:    d.mounts(image),
		Resources: container.Resources{
			Memory:     lim.MemoryBytes,
			MemorySwap: lim.MemoryBytes,
			NanoCPUs:   lim.NanoCPUs,
			PidsLimit:  &pids,
		},
	}
	if rt != nil {
		// The network stays "none": the proxy comes through its socket.
		cfg.Env = append(cfg.Env, rt.env...)
		host.Mounts = slices.Clone(host.Mounts)
		for _, m := range rt.mounts() {
			host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: m[0], Target: m[1], ReadOnly: true})
		}
	}
	cfg.Env = append(cfg.Env, x.env...)
	if x.deps != "" {
		host.Mounts = append(slices.Clone(host.Mounts), mount.Mount{Type: mount.TypeBind, Source: x.deps, Target: lang.DepsDir, ReadOnly: !x.depsWritable})
	}
	if x.link != "" {
		// The daemon mounts it after the workdir's tmpfs, deeper paths last.
		src, dst := x.linkMount()
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: src, Target: dst, ReadOnly: true})
	}
	return cfg, host
}

// exec feeds a started container its input and collects the outcome. The
// container is removed afterwards on every path. Collected files come on
// the attach stream with the output, not through the archive API: the
// workdir is a tmpfs, which that API does not see and which is gone once
// the container stops. The result comes from the entry script's end lines
// where they are whole and tell it all; otherwise (a timeout, a process
// killed for memory, a container that died) from the daemon, once the
// container has stopped.
func (d *dockerRunner) exec(ctx context.Context, b *box, j job) (res Result, err error) {
	defer d.discard(b)
	out := newOutputs(j)
	ends := newEndLines(j.end, out.stdoutWriter(), out.stderr)
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(ends.stdout, ends.stderr, b.conn.Reader)
		copied <- err
	}()
	start := time.Now()
	// The input stays open until the run ends: its end tells the container
	// that this process is gone.
	if _, err := b.conn.Conn.Write(j.stdin); err != nil {
		return Result{}, fmt.Errorf("%w: write input: %w", errStale, err)
	}

	var timedOut atomic.Bool
	timer := time.AfterFunc(j.limits.Timeout, func() {
		timedOut.Store(true)
		d.kill(b.id)
	})
	defer timer.Stop()
	select {
	case cerr := <-copied:
		// Without the end lines the daemon tells how the run ended.
		res.Duration = time.Since(start)
		if cerr != nil && !timedOut.Load() {
			d.log.Debug("sandbox: output stream ended with error", "id", short(b.id), "err", cerr)
		}
	case <-ends.done:
		res.Duration = time.Since(start)
		if code, ok := ends.status(); ok && !timedOut.Load() {
			// The end lines say it all: the container is left to go
			// down on its own, and removed (discard).
			timer.Stop()
			b.conn.Close()
			<-copied
			res.ExitCode = code
			return res, out.fill(&res)
		}
		// A process was killed for memory (or the lines could not say):
		// the daemon's state tells whether the limit was the run's. The
		// container is going down; the timeout still holds.
		select {
		case <-copied:
		case <-ctx.Done():
			d.kill(b.id)
			<-copied
			return Result{}, fmt.Errorf("sandbox run: %w", ctx.Err())
		}
	case <-ctx.Done():
		d.kill(b.id)
		<-copied
		return Result{}, fmt.Errorf("sandbox run: %w", ctx.Err())
	}
	timer.Stop()
	ends.flush()

	wctx, stopWait := context.WithCancel(ctx)
	defer stopWait()
	wait := d.cli.ContainerWait(wctx, b.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case w := <-wait.Result:
		res.ExitCode = int(w.StatusCode)
	case err := <-wait.Error:
		return Result{}, fmt.Errorf("container wait: %w", err)
	case <-ctx.Done():
		d.kill(b.id)
		return Result{}, fmt.Errorf("container wait: %w", ctx.Err())
	}
	// The wait answer has no OOM flag; the state does.
	ins, err := d.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
	if err != nil {
		return Result{}, fmt.Errorf("container inspect: %w", err)
	}
	if ins.Container.State == nil {
		return Result{}, fmt.Errorf("container inspect: no state for %s", short(b.id))
	}
	res.OOMKilled = ins.Container.State.OOMKilled
	res.TimedOut = timedOut.Load()
	return res, out.fill(&res)
}

// kill stops the whole container (and so the whole process tree) at once.
// It uses its own context: it must happen even when the caller gave up.
func (d *dockerRunner) kill(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
		d.log.Warn("sandbox: kill failed", "id", short(id), "err", err)
	}
}

// discard force-removes a container in the background with a fresh
// context; the result of a run does not wait for the daemon's cleanup.
// Close waits for every pending removal.
func (d *dockerRunner) discard(b *box) {
	if b.conn.Conn != nil {
		b.conn.Close()
	}
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		d.remove(b.id)
	}()
}

func (d *dockerRunner) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !cerrdefs.IsNotFound(err) {
		d.log.Warn("sandbox: remove failed", "id", short(id), "err", err)
	}
}

// Close drains the pools and waits for all removals.
func (d *dockerRunner) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	d.cancel()
	close(d.stop)
	<-d.reaped
	for _, pl := range d.pools {
		pl.close()
	}
	d.deps.close()
	d.bg.Wait()
	return d.cli.Close()
}

// settle waits for pending removals; tests use it to look at a quiet
// daemon.
func (d *dockerRunner) settle() { d.bg.Wait() }

// poolKey is what must match for a warm container to serve a run: limits
// that are fixed at container creation.
type poolKey struct {
	profile, image                     string
	memory, cpus, pids, workdir, tmpfs int64
}

func newPoolKey(p Profile, image string, l Limits) poolKey {
	return poolKey{p.Name, image, l.MemoryBytes, l.NanoCPUs, l.Pids, l.WorkdirBytes, l.TmpBytes}
}

// Reap removes leaked sandbox containers: those whose owner process on this
// host is gone, and those of other hosts older than a day. It returns how
// many it removed; without a docker daemon there is nothing to reap.
func Reap(ctx context.Context) (int, error) {
	cli, err := newDockerClient(ctx)
	if err != nil {
		return 0, nil
	}
	defer cli.Close()
	return reap(ctx, cli, slog.Default())
}

func reap(ctx context.Context, cli dockerAPI, log *slog.Logger) (int, error) {
	n, err := reapContainers(ctx, cli, log)
	v, verr := reapVolumes(ctx, cli)
	if v > 0 {
		log.Info("sandbox: reaped toolchain volumes of removed images", "volumes", v)
	}
	return n + v, errors.Join(err, verr)
}

// reapContainers removes the sandbox containers whose owner is gone. Live
// runners on one host reap at once: a container another one is removing
// is no error.
func reapContainers(ctx context.Context, cli dockerAPI, log *slog.Logger) (int, error) {
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", labelSandbox+"=1")})
	if err != nil {
		return 0, fmt.Errorf("container list: %w", err)
	}
	host, _ := os.Hostname()
	n := 0
	var errs []error
	for _, c := range list.Items {
		if !leaked(c.Labels[labelOwner], host, time.Unix(c.Created, 0)) {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			if !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
				errs = append(errs, fmt.Errorf("container remove %s: %w", short(c.ID), err))
			}
			continue
		}
		log.Info("sandbox: reaped leaked container", "id", short(c.ID), "owner", c.Labels[labelOwner])
		n++
	}
	return n, errors.Join(errs...)
}

// leaked decides from an owner label (owner.ID) whether a container's
// owner is gone. A container of another host is taken for leaked once it
// is older than foreignReapAge: its owner's liveness cannot be checked.
func leaked(ownerID, host string, created time.Time) bool {
	gone, local := owner.Gone(ownerID, host)
	if !local {
		return time.Since(created) > foreignReapAge
	}
	return gone
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func runnerID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// LocalDaemon reports whether the docker daemon the sandboxes would use
// (DOCKER_HOST, else the default socket) is reached through a unix socket
// of this machine: only such a daemon can mount this host's files into a
// sandbox, as egress runs need (the proxy's socket and the forwarder).
func LocalDaemon() bool {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return false
	}
	defer cli.Close()
	return strings.HasPrefix(cli.DaemonHost(), "unix://")
}
