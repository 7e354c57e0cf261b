package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/tools"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// EgressRoutes opens the egress proxy to one sandbox run of a task, with
// allow rules on top of the proxy's (worker.Egress).
type EgressRoutes interface {
	Route(taskID string, allow []string) (EgressRoute, error)
}

// EgressRoute is the proxy opened to one run: the run's sandbox.Spec
// Egress, and once the run has ended, its connections.
type EgressRoute interface {
	Sandbox() sandbox.Egress
	Close(ctx context.Context) ([]egress.Record, int, error)
}

// depsInstall is what a check found of a project's dependencies: the
// directory its tests see them in ("" when it declares none), or the
// failed install the model is told about.
type depsInstall struct {
	dir    string
	env    map[string]string
	link   string       // lang.Deps.Link
	note   string       // for TestSummary.Deps
	failed *TestSummary // the install failed: the check's outcome
}

// spec adds the installed dependencies to a test run's spec.
func (d depsInstall) spec(s sandbox.Spec) sandbox.Spec {
	s.Deps, s.Env, s.DepsLink = d.dir, d.env, d.link
	return s
}

// installDeps installs the dependencies the project's manifests declare,
// once per distinct manifests: the install runs in a sandbox whose only
// network is the egress proxy, and its directory is kept under DepsDir,
// keyed by the manifests' hash (with the language, its toolchain and the
// registry), for every later check of any task to mount read-only. A
// project that declares none installs nothing, and so does a worker
// without the proxy, where a language that cannot build without its
// install (lang.Deps.Required) fails the check and says why.
func (a *Activities) installDeps(ctx context.Context, l lang.Language, files []workspace.File) (depsInstall, error) {
	manifests := manifestsOf(l, files)
	if len(l.Deps.Install) == 0 || len(manifests) == 0 ||
		(l.Deps.Declares != nil && !l.Deps.Declares(manifestContents(manifests))) {
		return depsInstall{}, nil
	}
	names := strings.Join(manifestNames(manifests), ", ")
	if a.Egress == nil {
		if !l.Deps.Required {
			return depsInstall{}, nil
		}
		return depsInstall{failed: installRefused(l, names, "installs are off on this worker", fmt.Sprintf(
			"this worker installs no dependencies (its sandboxes cannot reach the egress proxy: the worker's log says why), "+
				"so nothing provides what %s declares: use the standard library only, or turn installs on and run the task again", names))}, nil
	}
	index, urls, err := installIndex(l, a.DepsIndexes[l.Name])
	if err != nil {
		return depsInstall{failed: installRefused(l, names, "no registry to install from", fmt.Sprintf("%v; what %s declares cannot be installed", err, names))}, nil
	}
	toolchain, err := a.toolchain(ctx, l)
	if err != nil {
		return depsInstall{}, err
	}
	dir := filepath.Join(a.depsDir(), l.Name+"-"+depsKey(l, a.Sandbox.Name(), toolchain, index, a.DepsHostEnv[l.Name], manifests))
	d := depsInstall{dir: dir, env: l.Deps.Env, link: l.Deps.Link}
	if err := ownDepsDir(filepath.Dir(dir)); err != nil {
		return depsInstall{}, err
	}
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && ownedByWorker(fi) {
		if linkIntact(l, dir) && useInstall(dir) {
			d.note = fmt.Sprintf("%s dependencies: cached (%s)", l.Title, names)
			return d, nil
		}
		// A cleaner of temporary files took part of it: made again.
		a.removeInstall(l.Name)(dir)
	}
	start := time.Now()
	res, refused, err := a.runInstall(ctx, l, index, urls, manifests, files, dir)
	if err != nil {
		return depsInstall{}, err
	}
	took := time.Since(start).Round(time.Millisecond)
	d.note = fmt.Sprintf("%s dependencies: installed in %s (not cached)", l.Title, took)
	if len(refused) > 0 {
		d.note += "; the egress proxy refused " + joinLimited(refused, 5)
	}
	if succeeded(res) {
		a.evictInstalls(l.Name, dir)
		return d, nil
	}
	s := summarize(res, lang.Language{}, a.limits().MemoryBytes)
	s.Stage, s.Passed, s.FailingTests = "install", false, nil
	if s.ExitCode == 0 {
		s.ExitCode = 1
	}
	text := l.Deps.InstallText
	if text == "" {
		text = strings.Join(l.Deps.Install, " ")
	}
	s.Output = tail(fmt.Sprintf("installing the dependencies (%s) failed; fix %s:\n%s",
		text, strings.Join(manifestNames(manifests), " or "), s.Output), outputTail)
	s.Deps = strings.Replace(d.note, "installed in", "install failed after", 1)
	d.failed = &s
	return d, nil
}

// installRefused is the failed check of an install that cannot run over
// the manifests names: why is for the status line, explain for the model
// and the person.
func installRefused(l lang.Language, names, why, explain string) *TestSummary {
	return &TestSummary{Stage: "install", ExitCode: 1, Output: explain,
		Deps: fmt.Sprintf("%s dependencies: not installed, %s (%s)", l.Title, why, names)}
}

// installIndex is the registry index an install names in its IndexVar,
// from the configured one, and the URLs the egress proxy lets it reach
// (lang.Deps.Index).
func installIndex(l lang.Language, configured string) (string, []string, error) {
	if l.Deps.Index != nil {
		return l.Deps.Index(configured)
	}
	if configured == "" {
		return "", nil, nil
	}
	return configured, []string{configured}, nil
}

// runInstall runs the language's install command over the manifests,
// through a route of the egress proxy that reaches the language's
// registries and the urls, into a new directory that becomes dir once the
// install has succeeded and its warm-up has run over the project's files.
// It returns the hosts the proxy refused.
func (a *Activities) runInstall(ctx context.Context, l lang.Language, index string, urls []string, manifests, files []workspace.File, dir string) (sandbox.Result, []string, error) {
	tmp, err := newInstallDir(filepath.Dir(dir))
	if err != nil {
		return sandbox.Result{}, nil, fmt.Errorf("install deps: %w", err)
	}
	defer func() {
		if isDir(tmp) { // gone by then on success
			a.removeInstall(l.Name)(tmp)
		}
	}()
	res, refused, err := a.runWithRegistries(ctx, "install deps", l, index, urls, sandbox.Spec{Profile: l.Name, Files: manifests, Cmd: l.Deps.Install,
		Limits: a.limits(), Deps: tmp, DepsWritable: true, Env: a.installEnv(l)})
	if err != nil || !succeeded(res) {
		return res, refused, err
	}
	a.warmInstall(ctx, l, files, tmp)
	// Only the worker's user may change what later runs import.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return res, refused, fmt.Errorf("install deps: %w", err)
	}
	// The runs mount the link: an install that had nothing to put there
	// leaves it empty, and one that made it anything but a directory is
	// not kept.
	if l.Deps.Link != "" {
		link := filepath.Join(tmp, l.Deps.Link)
		if err := os.Mkdir(link, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return res, refused, fmt.Errorf("install deps: %w", err)
		}
		if fi, err := os.Lstat(link); err != nil || !fi.IsDir() {
			return res, refused, fmt.Errorf("install deps: the install left %s, and not as a directory", l.Deps.Link)
		}
	}
	// A check of another task may have installed the same meanwhile:
	// either directory is as good.
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) && !isDir(dir) {
		return res, refused, fmt.Errorf("install deps: %w", err)
	}
	return res, refused, nil
}

// warmInstall runs the language's warm-up (lang.Deps.Warm) over the
// project's files with the install at dir writable and no network. A
// warm-up that fails loses what it would have left, and nothing else:
// the runs find no DepsGoCache, or one with what it finished.
func (a *Activities) warmInstall(ctx context.Context, l lang.Language, files []workspace.File, dir string) {
	if len(l.Deps.Warm) == 0 {
		return
	}
	env := maps.Clone(l.Deps.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, l.Deps.WarmEnv)
	start := time.Now()
	res, err := a.Sandbox.Run(ctx, sandbox.Spec{Profile: l.Name, Files: files, Cmd: l.Deps.Warm, Limits: a.limits(),
		Deps: dir, DepsWritable: true, Env: env})
	if err == nil && !succeeded(res) {
		err = fmt.Errorf("exit code %d (timed out: %t, killed for memory: %t): %s", res.ExitCode, res.TimedOut, res.OOMKilled, tail(res.Stderr, 500))
	}
	if err != nil {
		slog.Warn("the warm-up of installed dependencies failed; the runs over them do without it", "language", l.Name, "error", err)
		return
	}
	slog.Info("warmed installed dependencies", "language", l.Name, "took", time.Since(start).Round(time.Millisecond))
}

// newInstallDir makes a directory under root for an install run to
// write (the sandbox's user may not be the worker's); crashed runs leave
// it for evictInstalls to remove.
func newInstallDir(root string) (string, error) {
	tmp, err := os.MkdirTemp(root, installingPrefix)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o777); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// installEnv is the environment of a run that installs: the language's
// InstallEnv, or its Env when it has none, with what the ecosystem's
// configuration on the worker sets (DepsHostEnv).
func (a *Activities) installEnv(l lang.Language) map[string]string {
	env := maps.Clone(l.Deps.InstallEnv)
	if env == nil {
		env = maps.Clone(l.Deps.Env)
	}
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, a.DepsHostEnv[l.Name])
	return env
}

// runWithRegistries runs spec with the network only through a route of
// the egress proxy to the language's registries and the index urls (see
// registriesOf), the index named in spec's environment, and returns the
// hosts the proxy refused; what names the run in errors.
func (a *Activities) runWithRegistries(ctx context.Context, what string, l lang.Language, index string, urls []string, spec sandbox.Spec) (sandbox.Result, []string, error) {
	env := maps.Clone(spec.Env)
	if env == nil {
		env = map[string]string{}
	}
	allow := registriesOf(l, index, urls, env)
	spec.Env = env
	return a.runThroughEgress(ctx, what, allow, spec)
}

// runThroughEgress runs spec with the network only through a route of
// the egress proxy that reaches the hosts allow names, and returns the
// hosts the proxy refused; what names the run in errors.
func (a *Activities) runThroughEgress(ctx context.Context, what string, allow []string, spec sandbox.Spec) (sandbox.Result, []string, error) {
	rt, err := a.Egress.Route(taskIDOf(ctx), allow)
	if err != nil {
		return sandbox.Result{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	spec.Network, spec.Egress = sandbox.NetworkEgress, rt.Sandbox()
	res, err := a.runSandbox(ctx, "", spec)
	records, _, cerr := rt.Close(ctx)
	if err != nil {
		return res, nil, fmt.Errorf("%s: %w", what, err)
	}
	if cerr != nil {
		return res, nil, fmt.Errorf("%s: connection record: %w", what, cerr)
	}
	return res, refusedHosts(records), nil
}

// registriesOf are the hosts a run that reaches the network through the
// egress proxy may fetch from: the language's registries and, with a
// registry index configured, the hosts of urls; env then names the index
// in the language's IndexVar.
func registriesOf(l lang.Language, index string, urls []string, env map[string]string) []string {
	allow := slices.Clone(l.Deps.Registries)
	if index != "" && l.Deps.IndexVar != "" {
		env[l.Deps.IndexVar] = index
		if l.Deps.IndexEnv != nil {
			maps.Copy(env, l.Deps.IndexEnv(index))
		}
		for _, s := range urls {
			if u, err := url.Parse(s); err == nil && u.Host != "" && !slices.Contains(allow, u.Host) {
				allow = append(allow, u.Host)
			}
		}
	}
	return allow
}

// ownDepsDir makes dir, where installs are kept, or checks the one there:
// a directory of the worker's user that no one else may write (the
// default is under the shared temporary directory, where another user
// could have made it first to plant what the tests import). The sandbox's
// user, not the worker's, reaches installs through it, but no one else
// may list it (an install under way is writable by all until it is
// done): it is 0711.
func ownDepsDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("install deps: %w", err)
	}
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("install deps: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("install deps: %w", err)
	}
	if !fi.IsDir() || !ownedByWorker(fi) {
		return fmt.Errorf("install deps: %s is not a directory of this worker's user: remove it and try again", dir)
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return fmt.Errorf("install deps: %w", err)
	}
	return nil
}

// linkIntact reports whether an install still holds the directory the
// runs see in the project (lang.Deps.Link), which a cleaner of temporary
// files may have removed.
func linkIntact(l lang.Language, dir string) bool {
	if l.Deps.Link == "" {
		return true
	}
	fi, err := os.Lstat(filepath.Join(dir, l.Deps.Link))
	return err == nil && fi.IsDir()
}

// evictInstalls keeps the installs within DepsMaxSize once dir, new, has
// been added, removing those used least recently. It works in the
// background, one eviction at a time: measuring and removing installs
// takes a while, which the check does not wait for.
func (a *Activities) evictInstalls(profile, dir string) <-chan struct{} {
	useInstall(dir) // its time is the install's end, not its start
	done := make(chan struct{})
	if a.DepsMaxSize <= 0 || !evicting.TryLock() {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		defer evicting.Unlock()
		// Workers sharing the directory (sandbox.shared_dir) take turns too.
		unlock, ok := lockEviction(filepath.Dir(dir))
		if !ok {
			return
		}
		defer unlock()
		removed, err := evictInstalls(filepath.Dir(dir), a.DepsMaxSize, time.Now(), a.removeInstall(profile))
		if err != nil {
			slog.Warn("keep installs within their size limit", "error", err)
		}
		if len(removed) > 0 {
			slog.Info("evicted installed dependencies used least recently", "limit", a.DepsMaxSize, "evicted", removed)
		}
	}()
	return done
}

// succeeded reports a run that ended by itself with exit status 0.
func succeeded(res sandbox.Result) bool {
	return res.ExitCode == 0 && !res.TimedOut && !res.OOMKilled
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// refusedHosts are the host:port the proxy denied, once each.
func refusedHosts(records []egress.Record) []string {
	var hosts []string
	for _, r := range records {
		h := fmt.Sprintf("%s:%d", r.Host, r.Port)
		if r.Verdict == egress.Denied && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// manifestsOf are the project's manifest files, in the language's order,
// then the local ones they name (lang.Deps.Local), and those those name,
// in turn: a name with a glob is each file of the project it matches.
func manifestsOf(l lang.Language, files []workspace.File) []workspace.File {
	var out []workspace.File
	add := func(name string) bool {
		i := slices.IndexFunc(files, func(f workspace.File) bool { return f.Path == name })
		if i < 0 || slices.ContainsFunc(out, func(f workspace.File) bool { return f.Path == name }) {
			return false
		}
		out = append(out, files[i])
		return true
	}
	for _, name := range l.Deps.Manifests {
		add(name)
	}
	for grew := l.Deps.Local != nil && len(out) > 0; grew; {
		grew = false
		for _, name := range l.Deps.Local(manifestContents(out)) {
			if !strings.ContainsAny(name, "*?[") {
				grew = add(name) || grew
				continue
			}
			for _, f := range files {
				if tools.MatchPath(name, f.Path) {
					grew = add(f.Path) || grew
				}
			}
		}
	}
	return out
}

func manifestContents(manifests []workspace.File) map[string][]byte {
	m := make(map[string][]byte, len(manifests))
	for _, f := range manifests {
		m[f.Path] = f.Data
	}
	return m
}

func manifestNames(manifests []workspace.File) []string {
	names := make([]string, len(manifests))
	for i, f := range manifests {
		names[i] = f.Path
	}
	return names
}

// toolchain names the toolchain the language's sandboxes run
// (sandbox.Runner.Toolchain), heartbeating meanwhile: its image may be
// built first, which takes minutes.
func (a *Activities) toolchain(ctx context.Context, l lang.Language) (string, error) {
	stop := heartbeatWhile(ctx)
	defer stop()
	return a.Sandbox.Toolchain(ctx, l.Name)
}

// depsKey names an install by everything that decides what it installs:
// the language's install command and warm-up, its environment (with the worker's,
// hostEnv), the backend and its toolchain (sandbox.Runner.Toolchain: an
// install made for one interpreter may not load in another), the
// registry and the manifests (what of them the install reads,
// lang.Deps.KeyData).
func depsKey(l lang.Language, backend, toolchain, index string, hostEnv map[string]string, manifests []workspace.File) string {
	h := sha256.New()
	for _, s := range []string{l.Name, backend, toolchain, index, strings.Join(l.Deps.Install, "\x00"), strings.Join(l.Deps.Warm, "\x00")} {
		fmt.Fprintf(h, "%d:%s\n", len(s), s)
	}
	for _, env := range []map[string]string{l.Deps.InstallEnv, hostEnv} {
		for _, k := range slices.Sorted(maps.Keys(env)) {
			fmt.Fprintf(h, "%d:%s=%d:%s\n", len(k), k, len(env[k]), env[k])
		}
	}
	contents := manifestContents(manifests)
	for _, f := range manifests {
		data := f.Data
		if l.Deps.KeyData != nil {
			data = l.Deps.KeyData(f.Path, contents)
		}
		fmt.Fprintf(h, "%d:%s\n%d:", len(f.Path), f.Path, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// depsDir is where installs are kept.
func (a *Activities) depsDir() string {
	if a.DepsDir != "" {
		return a.DepsDir
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("autocoder-deps-%d", os.Geteuid()))
}

// taskIDOf is the task (workflow) a check runs for, for the proxy's
// record.
func taskIDOf(ctx context.Context) string {
	if !activity.IsActivity(ctx) {
		return ""
	}
	return activity.GetInfo(ctx).WorkflowExecution.ID
}
