package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
)

// bwrapRunner runs each spec in a fresh set of namespaces with bubblewrap,
// using the host's own toolchains read-only.
type bwrapRunner struct {
	bwrap   string
	prlimit string
	log     *slog.Logger
	metrics Metrics
	// A root worker drops to an unprivileged host uid before bwrap starts:
	// one of its own per sandbox, from uids, so that no sandbox shares a
	// per-user limit with another; or cred, one for all, when the range
	// cannot be used. An unprivileged worker runs bwrap as itself.
	uids    *uidPool
	cred    *syscall.Credential
	etcDir  string
	seccomp []byte // the seccomp filter bwrap installs; nil for none
	cgroups *cgroups
	dir     string // the cache dir
	// profiles are the languages served; hostChecks whether each one's
	// toolchain is on the host, checked on first use.
	profiles   profileSet
	forward    *forwarder              // Config.Forwarder
	hostChecks sync.Map                // profile name -> *hostCheck
	goCache    atomic.Pointer[goCache] // nil until the go profile is first used
	goOnce     sync.Once
	limits     Limits // of the pools' sandboxes
	pools      map[bwrapKey]*warmPool[*proc]
	deps       depsPools[bwrapKey, *proc] // warm sandboxes for runs over an install
	poolSize   int                        // Config.PoolSize
	closed     atomic.Bool
	running    sync.WaitGroup
	bg         sync.WaitGroup // closes of evicted deps pools
}

// systemDirs are mounted read-only when they exist; on merged-/usr hosts
// the top-level ones are symlinks and are recreated as such.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are host files the toolchains need; the rest of /etc stays out.
// Debian's JDKs link their configuration (java.security, which any JVM
// program that loads a resource reads) into /etc/java-<version>.
var etcFiles = []string{"/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime", "/etc/java-*"}

func newBwrapRunner(ctx context.Context, cfg Config) (*bwrapRunner, error) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return nil, fmt.Errorf("%w: bwrap not found (apt-get install bubblewrap): %w", ErrUnavailable, err)
	}
	pl, err := exec.LookPath("prlimit")
	if err != nil {
		return nil, fmt.Errorf("%w: prlimit not found (apt-get install util-linux): %w", ErrUnavailable, err)
	}
	r := &bwrapRunner{bwrap: bw, prlimit: pl, log: cfg.Logger, metrics: cfg.Metrics, pools: map[bwrapKey]*warmPool[*proc]{},
		limits: cfg.PoolLimits.withDefaults().forPool(), poolSize: cfg.PoolSize}
	if r.dir, err = cacheDir(cfg.CacheDir); err != nil {
		return nil, err
	}
	if !cfg.noSeccomp {
		if r.seccomp, err = seccompFilter(); err != nil {
			r.log.Warn("sandbox: bwrap sandboxes run without a seccomp filter: the whole kernel is open to the code under test", "err", err)
		}
	}
	if r.etcDir, err = writeEtc(r.dir); err != nil {
		return nil, err
	}
	r.cgroups = detectCgroups(r.log)
	if err := r.chooseUIDs(ctx); err != nil {
		os.RemoveAll(r.etcDir)
		return nil, err
	}
	r.profiles = newProfileSet(cfg.Profiles)
	r.forward = cfg.forwarder
	if cfg.PoolSize > 0 {
		lim := cfg.PoolLimits.withDefaults()
		for _, p := range cfg.Profiles {
			r.pools[bwrapKey{p.Name, r.limits}] = newWarmPool(p.Name, cfg.PoolSize, r.log,
				func(ctx context.Context) (*proc, error) { return r.launch(ctx, p, lim, nil, extra{}) }, r.discard)
		}
	}
	return r, nil
}

// warm starts the profile's pool and, for go, the build of the Go cache.
func (r *bwrapRunner) warm(p Profile) {
	if r.hostToolchain(context.Background(), p) != nil {
		return
	}
	if p.GoCache != "" {
		r.startGoCache(p)
	}
	if pl := r.pools[bwrapKey{p.Name, r.limits}]; pl != nil {
		pl.replenish()
	}
}

// startGoCache starts building the Go cache, once; it returns nil without
// a Go toolchain.
func (r *bwrapRunner) startGoCache(p Profile) *goCache {
	r.goOnce.Do(func() {
		if goRoot := hostGoRoot(p); goRoot != "" {
			r.goCache.Store(startGoCache(r.dir, goRoot, p, r.log))
		}
	})
	return r.goCache.Load()
}

func (r *bwrapRunner) Name() string { return "bwrap" }

// uidPoolDir holds the locks of the sandbox uids; all workers of the host
// share it.
var uidPoolDir = filepath.Join(os.TempDir(), "autocoder-sandbox-uids")

// chooseUIDs picks the host uids sandboxes run as, best first, and says
// in the log when sandboxes share one.
func (r *bwrapRunner) chooseUIDs(ctx context.Context) error {
	if os.Geteuid() != 0 {
		r.log.Warn("sandbox: bwrap runs every sandbox as this worker's uid: the process limit (RLIMIT_NPROC) counts all of that user's processes, so a fork bomb in one task can stop the others' runs; run the worker as root or use docker for per-task limits", "uid", os.Geteuid())
		return r.probe(ctx)
	}
	r.cred = &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID, Groups: []uint32{}}
	pool, err := newUIDPool(uidPoolDir)
	if err == nil {
		r.uids = pool
		if err = r.probe(ctx); err == nil {
			return nil
		}
		r.uids = nil
	}
	r.log.Warn("sandbox: bwrap cannot give each sandbox a uid of its own; all run as one uid, whose process limit they share, so a fork bomb in one task can stop the others' runs", "uid", sandboxUID, "err", err)
	return r.probe(ctx)
}

// credential returns the host uid and gid a new sandbox runs as, and the
// lease to release once it is gone.
func (r *bwrapRunner) credential() (*syscall.Credential, *uidLease, error) {
	if r.uids == nil {
		return r.cred, nil, nil
	}
	l, err := r.uids.acquire()
	if err != nil {
		return nil, nil, err
	}
	return l.credential(), l, nil
}

// check starts a sandbox that runs /bin/true, as at start (probe).
func (r *bwrapRunner) check(ctx context.Context) error {
	if r.closed.Load() {
		return ErrClosed
	}
	return r.probe(ctx)
}

// probe checks that user namespaces work for the sandbox user.
func (r *bwrapRunner) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cred, lease, err := r.credential()
	if err != nil {
		return err
	}
	defer lease.release()
	args := append(r.baseArgs(Profile{}, Limits{}.withDefaults(), nil, extra{}), "/bin/true")
	cmd := exec.CommandContext(ctx, r.bwrap, args...)
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	// With the filter: a kernel that cannot install it has no bwrap backend.
	done, err := r.passSeccomp(cmd)
	if err != nil {
		return err
	}
	defer done()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: bwrap cannot create namespaces or install its seccomp filter here: %w: %s", ErrUnavailable, err, bytes.TrimSpace(out))
	}
	return nil
}

// baseArgs builds the bwrap command line up to the program to run. With a
// route the run reaches the egress proxy.
func (r *bwrapRunner) baseArgs(p Profile, lim Limits, rt *route, x extra) []string {
	var env []string
	if p.Name != "" {
		env = p.environ(p.hostPATH())
	}
	a := []string{
		"--unshare-all", "--die-with-parent", "--new-session",
		"--uid", strconv.Itoa(sandboxUID), "--gid", strconv.Itoa(sandboxUID),
		"--hostname", "sandbox",
	}
	if r.cred == nil && os.Geteuid() == 0 {
		a = append(a, "--cap-drop", "ALL")
	}
	if r.seccomp != nil {
		a = append(a, "--seccomp", strconv.Itoa(seccompFD))
	}
	if rt != nil {
		env = append(env, rt.env...)
	}
	env = append(env, x.env...)
	a = append(a, "--clearenv")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&fs.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", t, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, pattern := range etcFiles {
		matches, _ := filepath.Glob(pattern)
		for _, f := range matches {
			a = append(a, "--ro-bind-try", f, f)
		}
	}
	for _, f := range []string{"passwd", "group", "hosts", "nsswitch.conf"} {
		a = append(a, "--ro-bind", filepath.Join(r.etcDir, f), "/etc/"+f)
	}
	for _, hp := range p.hostPaths() {
		if hp != "" && !strings.HasPrefix(hp+"/", "/usr/") {
			a = append(a, "--ro-bind", hp, hp)
		}
	}
	if p.GoCache != "" {
		// launch clears GoCache unless the cache is built.
		a = append(a, "--ro-bind", r.goCache.Load().dir, p.GoCache)
	}
	if rt != nil {
		// --unshare-all leaves the network namespace its loopback alone;
		// the proxy comes through its socket.
		for _, m := range rt.mounts() {
			a = append(a, "--ro-bind", m[0], m[1])
		}
	}
	if x.deps != "" {
		bind := "--ro-bind"
		if x.depsWritable {
			bind = "--bind"
		}
		a = append(a, bind, x.deps, lang.DepsDir)
	}
	a = append(a,
		"--proc", "/proc", "--dev", "/dev",
		// /dev is bwrap's own tmpfs, as large as the host allows, and
		// writable; only a capped /dev/shm stays writable, as in docker.
		"--size", strconv.FormatInt(shmBytes, 10), "--perms", "1777", "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--size", strconv.FormatInt(lim.TmpBytes, 10), "--perms", "1777", "--tmpfs", tmpDir,
		"--size", strconv.FormatInt(lim.WorkdirBytes, 10), "--perms", "0755", "--tmpfs", workDir,
	)
	if x.link != "" {
		src, dst := x.linkMount()
		a = append(a, "--ro-bind", src, dst)
	}
	// The root is bwrap's own tmpfs; left writable it would be an
	// unbounded place to fill memory.
	return append(a, "--remount-ro", "/", "--chdir", workDir)
}

// seccompFD is where bwrap reads the seccomp filter: the first of the
// command's ExtraFiles. prlimit, which starts bwrap, passes it on.
const seccompFD = 3

// passSeccomp gives cmd the filter to read on seccompFD, through a pipe:
// the program is far smaller than a pipe's buffer, and nothing of it stays
// on disk. The caller calls done once cmd has started or will not:
// exec.Cmd does not close ExtraFiles.
func (r *bwrapRunner) passSeccomp(cmd *exec.Cmd) (done func(), err error) {
	if r.seccomp == nil {
		return func() {}, nil
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("seccomp pipe: %w", err)
	}
	_, err = wr.Write(r.seccomp)
	wr.Close()
	if err != nil {
		rd.Close()
		return nil, fmt.Errorf("seccomp pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{rd}
	return func() { rd.Close() }, nil
}

// rlimits bound what the sandbox may take beside its cgroup; RLIMIT_CPU
// backs up the wall-clock timer. The address-space limit stands in for
// memory only when no cgroup limits it: it counts what a process reserves,
// not what it uses.
func rlimitArgs(lim Limits, cgroupMemory bool) []string {
	cpu := int64(lim.Timeout/time.Second) + 1
	fsize := max(lim.WorkdirBytes, lim.TmpBytes)
	a := []string{
		"--nproc=" + strconv.FormatInt(lim.Pids, 10),
		"--fsize=" + strconv.FormatInt(fsize, 10),
		"--cpu=" + strconv.FormatInt(cpu, 10),
		"--core=0",
		"--nofile=1024",
	}
	if !cgroupMemory {
		a = append(a, "--as="+strconv.FormatInt(lim.MemoryBytes, 10))
	}
	return a
}

// cgroupGate is the sandbox's first program when it has a cgroup: it waits
// for a line on stdin, which the worker writes once it has moved the
// process into the cgroup, and then becomes prlimit. So bwrap and all it
// starts are in the cgroup from their first instruction. The worker moves
// the process, rather than the kernel placing it at fork (clone3 with
// CLONE_INTO_CGROUP, SysProcAttr.UseCgroupFD), because that works on v2
// only; this one way serves both.
const cgroupGate = `read -r _ && exec "$@"`

// Run takes a warm sandbox when one matches, else starts one.
func (r *bwrapRunner) Run(ctx context.Context, spec Spec) (Result, error) {
	if r.closed.Load() {
		return Result{}, ErrClosed
	}
	r.running.Add(1)
	defer r.running.Done()
	j, err := prepare(r.profiles, r.forward, spec)
	if err != nil {
		return Result{}, err
	}
	// Warm-ups start once the run is over: they would compete with it for
	// the CPU.
	defer r.warm(j.profile)
	key := bwrapKey{j.profile.Name, j.limits.forPool()}
	take, dk, overDeps := warmSource(j, key, r.pools[key], &r.deps)
	res, err := r.run(ctx, j, take)
	if overDeps && err == nil {
		r.warmDeps(j, dk)
	}
	return res, err
}

// run runs the job in a warm sandbox from take, if it has one that works,
// else in a new one.
func (r *bwrapRunner) run(ctx context.Context, j job, take func() (*proc, bool)) (Result, error) {
	if p, ok := take(); ok {
		res, err := r.exec(ctx, p, j)
		if !errors.Is(err, errStale) {
			r.metrics.WarmPool(j.profile.Name, true)
			return res, err
		}
		r.log.Warn("sandbox: warm bwrap sandbox was unusable; starting another", "err", err)
	}
	r.metrics.WarmPool(j.profile.Name, false)
	p, err := r.launch(ctx, j.profile, j.limits, j.route, j.extra)
	if err != nil {
		return Result{}, err
	}
	return r.exec(ctx, p, j)
}

// warmDeps refills the warm sandbox of a run's install, once a run over it
// has worked. A launch that fails retires the pool: the next run over the
// install makes another.
func (r *bwrapRunner) warmDeps(j job, k depsKey[bwrapKey]) {
	if r.closed.Load() || r.poolSize <= 0 {
		return
	}
	// Not the job itself: it holds the run's input.
	name, p, lim, x := j.profile.Name+" (deps)", j.profile, j.limits, j.extra
	r.deps.replenish(k, &r.bg, func() *warmPool[*proc] {
		return newWarmPool(name, 1, r.log, overInstall(k, func(ctx context.Context) (*proc, error) {
			return r.launch(ctx, p, lim, nil, x)
		}, r.discard), r.discard)
	})
}

// bwrapKey is what must match for a warm sandbox to serve a run: the
// profile and the limits fixed when it starts.
type bwrapKey struct {
	profile string
	limits  Limits
}

// forPool clears the limits a backend applies per run rather than at start.
func (l Limits) forPool() Limits {
	l.OutputBytes = 0
	return l
}

// proc is one started sandbox waiting for its input.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *relay
	stderr *relay
	exited chan struct{} // closed when cmd.Wait has returned
	err    error         // cmd.Wait's error, once exited is closed
	uid    *uidLease     // released once exited is closed
	cgroup *cgroup       // nil without cgroups; removed once exited is closed
}

// launch starts a sandbox whose entry script seeds the Go cache, then waits
// for its input; it returns once the sandbox says it is ready. A go
// sandbox waits for the Go cache, starting its build if none has begun:
// without it the run would compile the same standard library itself.
func (r *bwrapRunner) launch(ctx context.Context, p Profile, lim Limits, rt *route, x extra) (*proc, error) {
	if err := r.hostToolchain(ctx, p); err != nil {
		return nil, err
	}
	if p.GoCache != "" {
		if c := r.startGoCache(p); c == nil || c.wait(ctx) != nil {
			p.GoCache = ""
		}
	}
	args := append(rlimitArgs(lim, r.cgroups.limitsMemory()), "--", r.bwrap)
	args = append(args, r.baseArgs(p, lim, rt, x)...)
	args = append(args, "/bin/sh", "-c", entryScript, "sbx", x.seeds(p), "", readyMarker)

	cred, lease, err := r.credential()
	if err != nil {
		return nil, err
	}
	cg, err := r.cgroups.newCgroup(lim)
	if err != nil {
		lease.release()
		return nil, err
	}
	// release frees what a sandbox that never started holds.
	release := func() {
		if err := cg.remove(); err != nil {
			r.log.Warn("sandbox: cgroup not removed", "err", err)
		}
		lease.release()
	}
	cmd := exec.Command(r.prlimit, args...)
	if cg != nil {
		cmd = exec.Command("/bin/sh", append([]string{"-c", cgroupGate, "sbx-gate", r.prlimit}, args...)...)
	}
	cmd.Env = []string{}
	done, err := r.passSeccomp(cmd)
	if err != nil {
		release()
		return nil, err
	}
	defer done()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		release()
		return nil, fmt.Errorf("bwrap stdin: %w", err)
	}
	pr := &proc{cmd: cmd, stdin: stdin, stdout: &relay{}, stderr: &relay{ready: make(chan struct{})}, exited: make(chan struct{}), uid: lease, cgroup: cg}
	cmd.Stdout, cmd.Stderr = pr.stdout, pr.stderr
	// Own process group: a kill reaches bwrap and, through
	// --die-with-parent and the pid namespace, everything inside.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		release()
		return nil, fmt.Errorf("bwrap start: %w", err)
	}
	go func() {
		pr.err = cmd.Wait()
		close(pr.exited)
	}()
	if cg != nil {
		err := cg.add(cmd.Process.Pid)
		if err == nil {
			_, err = io.WriteString(stdin, "\n")
		}
		if err != nil {
			r.discard(pr)
			return nil, fmt.Errorf("bwrap cgroup: %w", err)
		}
	}
	select {
	case <-pr.stderr.ready:
		return pr, nil
	case <-pr.exited:
		release()
		return nil, fmt.Errorf("bwrap sandbox exited while starting: %v: %s", pr.err, bytes.TrimSpace(pr.stderr.early()))
	case <-ctx.Done():
		r.discard(pr)
		return nil, fmt.Errorf("bwrap sandbox start: %w", ctx.Err())
	}
}

// exec feeds a started sandbox its input and collects the outcome.
func (r *bwrapRunner) exec(ctx context.Context, pr *proc, j job) (Result, error) {
	defer r.discard(pr)
	select {
	case <-pr.exited:
		return Result{}, fmt.Errorf("%w: exited before its input: %v", errStale, pr.err)
	default:
	}
	out := newOutputs(j)
	pr.stdout.attach(out.stdoutWriter())
	pr.stderr.attach(out.stderr)
	var timedOut atomic.Bool
	start := time.Now()
	timer := time.AfterFunc(j.limits.Timeout, func() {
		timedOut.Store(true)
		r.kill(pr)
	})
	defer timer.Stop()
	stop := context.AfterFunc(ctx, func() { r.kill(pr) })
	defer stop()
	// A sandbox that fails to unpack stops reading; the entry script then
	// reports it, so a failed write needs no handling of its own.
	go func() {
		_, _ = pr.stdin.Write(j.stdin)
		_ = pr.stdin.Close()
	}()
	<-pr.exited
	res := Result{Duration: time.Since(start), TimedOut: timedOut.Load()}
	if ctx.Err() != nil && !res.TimedOut {
		return Result{}, fmt.Errorf("sandbox run: %w", ctx.Err())
	}
	var exitErr *exec.ExitError
	switch {
	case pr.err == nil:
	case errors.As(pr.err, &exitErr):
		res.ExitCode = exitCode(exitErr.ProcessState)
	default:
		return Result{}, fmt.Errorf("bwrap wait: %w", pr.err)
	}
	res.OOMKilled = pr.cgroup.oomKilled(res.ExitCode)
	return res, out.fill(&res)
}

// kill ends a sandbox's whole process group and whatever is in its cgroup.
func (r *bwrapRunner) kill(pr *proc) {
	_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
	pr.cgroup.kill()
}

// discard kills a sandbox and waits until it is gone.
func (r *bwrapRunner) discard(pr *proc) {
	r.kill(pr)
	<-pr.exited
	if err := pr.cgroup.remove(); err != nil {
		r.log.Warn("sandbox: cgroup not removed", "err", err)
	}
	pr.uid.release()
}

// relay passes a sandbox's output on to the run it serves. Until a run is
// attached, the stderr relay looks for the ready marker and keeps what came
// before it, for the error of a sandbox that fails to start.
type relay struct {
	mu    sync.Mutex
	w     io.Writer
	ready chan struct{} // closed once the ready marker was seen; nil on stdout
	buf   []byte
}

const relayEarlyMax = 4 << 10

func (l *relay) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		return l.w.Write(b)
	}
	if l.ready == nil || len(l.buf) >= relayEarlyMax {
		return len(b), nil
	}
	l.buf = append(l.buf, b[:min(len(b), relayEarlyMax-len(l.buf))]...)
	if i := bytes.Index(l.buf, []byte(readyMarker+"\n")); i >= 0 {
		select {
		case <-l.ready:
		default:
			close(l.ready)
		}
	}
	return len(b), nil
}

func (l *relay) attach(w io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w = w
}

func (l *relay) early() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.buf...)
}

// exitCode maps a signal death to the shell convention 128+n, as docker
// reports it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func (r *bwrapRunner) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	for _, pl := range r.pools {
		pl.close()
	}
	r.deps.close()
	r.bg.Wait()
	r.running.Wait()
	return os.RemoveAll(r.etcDir)
}

// cacheDir returns the runner's directory, which must be ours and not
// writable by others: sandboxes read from it.
func cacheDir(dir string) (string, error) {
	if dir == "" {
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("autocoder-sandbox-%d", os.Geteuid()))
	}
	return privateDir(dir, 0o755)
}

// privateDir makes dir, checks that it is ours and not writable by others,
// and gives it mode perm.
func privateDir(dir string, perm fs.FileMode) (string, error) {
	if err := os.MkdirAll(dir, perm); err != nil {
		return "", fmt.Errorf("sandbox dir: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("sandbox dir: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("sandbox dir %s: must be a directory owned by uid %d and not writable by others", dir, os.Geteuid())
	}
	if err := os.Chmod(dir, perm); err != nil {
		return "", fmt.Errorf("sandbox dir: %w", err)
	}
	return dir, nil
}

// writeEtc writes the minimal /etc the sandbox sees.
func writeEtc(dir string) (string, error) {
	etc, err := os.MkdirTemp(dir, "etc-")
	if err != nil {
		return "", fmt.Errorf("sandbox etc: %w", err)
	}
	files := map[string]string{
		"passwd":        "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/tmp:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1 localhost sandbox\n::1 localhost\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(data), 0o644); err != nil {
			os.RemoveAll(etc)
			return "", fmt.Errorf("sandbox etc: %w", err)
		}
	}
	if err := os.Chmod(etc, 0o755); err != nil {
		os.RemoveAll(etc)
		return "", fmt.Errorf("sandbox etc: %w", err)
	}
	return etc, nil
}

// hostGoRoot is the Go root of the profile's host go, from its HostBin;
// "" when it has none.
func hostGoRoot(p Profile) string {
	for _, dir := range p.hostBin() {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			return filepath.Dir(dir)
		}
	}
	return ""
}

// goCache is a read-only Go build cache with the standard library built
// for the sandbox's settings, so `go test` in a fresh sandbox only compiles
// the project. It is built once per toolchain and kept in the cache dir.
type goCache struct {
	dir  string
	done chan struct{}
	err  error
}

func (c *goCache) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func startGoCache(dir, goRoot string, p Profile, log *slog.Logger) *goCache {
	ver, _ := os.ReadFile(filepath.Join(goRoot, "VERSION"))
	sum := sha256.Sum256(append([]byte(goRoot+"\x00"), ver...))
	c := &goCache{dir: filepath.Join(dir, "gocache-"+hex.EncodeToString(sum[:6])), done: make(chan struct{})}
	if _, err := os.Stat(filepath.Join(c.dir, "README")); err == nil {
		close(c.done)
		return c
	}
	go func() {
		defer close(c.done)
		start := time.Now()
		c.err = buildGoCache(c.dir, goRoot, p)
		if c.err != nil {
			log.Warn("sandbox: go build cache not built; go runs will compile the standard library", "err", c.err)
			return
		}
		log.Info("sandbox: go build cache ready", "dir", c.dir, "took", time.Since(start).Round(time.Millisecond))
	}()
	return c
}

// buildGoCache runs the profile's image recipe Setup, which fills
// $GOCACHE, on the host with the sandbox's Go environment, into a temp
// cache, and renames it into place, so a half-built cache is never used.
func buildGoCache(final, goRoot string, p Profile) error {
	tmp, err := os.MkdirTemp(filepath.Dir(final), "gocache-build-")
	if err != nil {
		return fmt.Errorf("go cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	cache := filepath.Join(tmp, "cache")
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("go cache: %w", err)
	}
	// The same environment as a sandbox run, with the writable places
	// moved into the temp dir: cache keys depend on the Go settings only.
	cmd := exec.Command("/bin/sh", "-ec", p.Recipe.Setup)
	cmd.Dir = home
	cmd.Env = append(p.environ(goRoot+"/bin:"+hostPath),
		"GOCACHE="+cache, "HOME="+home, "TMPDIR="+home, "GOTMPDIR="+home, "GOPATH="+home, "GOMODCACHE="+home+"/mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go cache: the recipe's setup: %w: %s", err, bytes.TrimSpace(out))
	}
	if err := os.Rename(cache, final); err != nil {
		// Another runner may have finished first.
		if _, serr := os.Stat(filepath.Join(final, "README")); serr != nil {
			return fmt.Errorf("go cache: %w", err)
		}
	}
	return nil
}

// hostCheck is the outcome of a profile's HostCheck, run once.
type hostCheck struct {
	once sync.Once
	err  error
}

// hostToolchain reports whether the profile's toolchain is on the host,
// running its HostCheck the first time: a language whose toolchain is
// missing fails its own runs, with what to install, and no other's.
func (r *bwrapRunner) hostToolchain(ctx context.Context, p Profile) error {
	v, _ := r.hostChecks.LoadOrStore(p.Name, &hostCheck{})
	c := v.(*hostCheck)
	c.once.Do(func() { c.err = runHostCheck(ctx, p) })
	return c.err
}

// Toolchain is the file of the host's toolchain program: an upgrade
// replaces it.
func (r *bwrapRunner) Toolchain(ctx context.Context, profile string) (string, error) {
	p, err := r.profiles.lookup(profile)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if err := r.hostToolchain(ctx, p); err != nil || p.HostToolchain == "" {
		return "", err
	}
	prog, err := lookPathIn(p.HostToolchain, p.hostPATH())
	if err == nil {
		prog, err = filepath.EvalSymlinks(prog)
	}
	var fi os.FileInfo
	if err == nil {
		fi, err = os.Stat(prog)
	}
	if err != nil {
		return "", fmt.Errorf("%w: the %s toolchain: %w", ErrUnavailable, p.Name, err)
	}
	return fmt.Sprintf("%s %d %d", prog, fi.Size(), fi.ModTime().UnixNano()), nil
}

// runHostCheck runs the profile's HostCheck with its PATH and environment.
func runHostCheck(ctx context.Context, p Profile) error {
	if len(p.HostCheck) == 0 {
		return nil
	}
	missing := func(err error, out []byte) error {
		if out = bytes.TrimSpace(out); len(out) > 0 {
			err = fmt.Errorf("%w: %s", err, clipBytes(out, 300))
		}
		return fmt.Errorf("%w: the %s toolchain is not on this host (%s): %w", ErrUnavailable, p.Name, p.Install, err)
	}
	prog, err := lookPathIn(p.HostCheck[0], p.hostPATH())
	if err != nil {
		return missing(err, nil)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, p.HostCheck[1:]...)
	cmd.Env = p.environ(p.hostPATH())
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return missing(err, out)
	}
	return nil
}

// lookPathIn finds a program in a PATH list; a name with a slash is
// itself.
func lookPathIn(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in %s", name, path)
}

// clipBytes keeps the first n bytes of b.
func clipBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
