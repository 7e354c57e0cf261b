package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// maxDepsPools bounds the installs that have warm sandboxes at once; the
// least recently used one's sandboxes go first.
const maxDepsPools = 4

// depsKey is what must match for a warm sandbox made for one run that
// mounts an install to serve another: the backend's pool key P, the
// install's directory as the mount saw it (its device and inode, so an
// install removed and made again at the same path is another), and the
// rest of the run's additions.
type depsKey[P comparable] struct {
	pool                 P
	deps, dir, link, env string
}

// depsKeyOf is the key of a run's install with the backend's pool key,
// and false for a run without one, one that reaches the proxy and one
// that may write its install: those take no sandbox made after another
// run.
func depsKeyOf[P comparable](j job, pool P) (depsKey[P], bool) {
	x := j.extra
	if x.deps == "" || x.depsWritable || j.route != nil {
		return depsKey[P]{}, false
	}
	dir, ok := installIdentity(x.deps)
	if !ok {
		return depsKey[P]{}, false
	}
	return depsKey[P]{pool: pool, deps: x.deps, dir: dir, link: x.link, env: strings.Join(x.env, "\x00")}, true
}

// current reports whether the install the key names is still there, the
// same directory.
func (k depsKey[P]) current() bool {
	dir, ok := installIdentity(k.deps)
	return ok && dir == k.dir
}

// overInstall wraps the launch of a warm sandbox over k's install: once
// the install is gone or replaced, before the sandbox starts or while it
// does, its pool retires (errRetired), as it does when a launch fails.
func overInstall[P comparable, T any](k depsKey[P], launch func(context.Context) (T, error), discard func(T)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		var none T
		if !k.current() {
			return none, fmt.Errorf("%w: install %s removed or replaced", errRetired, k.deps)
		}
		t, err := launch(ctx)
		if err != nil {
			return none, fmt.Errorf("%w: %w", errRetired, err)
		}
		if !k.current() {
			discard(t)
			return none, fmt.Errorf("%w: install %s replaced while its sandbox started", errRetired, k.deps)
		}
		return t, nil
	}
}

// installIdentity names the directory at path as a mount of it sees it:
// its device and inode, and its birth time where the file system keeps
// one, since a directory made anew may get a removed one's inode.
func installIdentity(path string) (string, bool) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return "", false
	}
	id := fmt.Sprintf("%d:%d:%d", st.Dev_major, st.Dev_minor, st.Ino)
	if st.Mask&unix.STATX_BTIME != 0 {
		id += fmt.Sprintf(":%d.%09d", st.Btime.Sec, st.Btime.Nsec)
	}
	return id, true
}

// warmSource is where a run takes its warm sandbox from: the pool of its
// install, for a run over one (whose key it returns, with true); the
// profile's pool pl (nil for none), for a run that adds nothing to the
// profile; else nowhere.
func warmSource[P comparable, T any](j job, key P, pl *warmPool[T], deps *depsPools[P, T]) (func() (T, bool), depsKey[P], bool) {
	if dk, ok := depsKeyOf(j, key); ok {
		return func() (T, bool) { return deps.take(dk) }, dk, true
	}
	if pl != nil && j.route == nil && j.extra.none() {
		return pl.take, depsKey[P]{}, false
	}
	return func() (T, bool) { var none T; return none, false }, depsKey[P]{}, false
}

// depsPools keeps one warm sandbox (T) for each of the installs most
// recently run with: the checks of a task that declares dependencies run
// again and again over the same install, and without these each would
// start a sandbox (the profile's own pools are made before any install is
// known, and a sandbox's mounts are fixed when it starts).
type depsPools[P comparable, T any] struct {
	mu     sync.Mutex
	closed bool
	keys   []depsKey[P] // least recently used first
	pools  map[depsKey[P]]*warmPool[T]
}

// take returns a warm sandbox for the key, if one is ready.
func (dp *depsPools[P, T]) take(k depsKey[P]) (T, bool) {
	dp.mu.Lock()
	pl := dp.pools[k]
	dp.mu.Unlock()
	if pl == nil {
		var none T
		return none, false
	}
	return pl.take()
}

// replenish refills the key's pool, making it (with newPool) if it is new
// and closing the least recently used one beyond maxDepsPools in the
// background, counted in bg: a pool's close waits for a launch under way.
func (dp *depsPools[P, T]) replenish(k depsKey[P], bg *sync.WaitGroup, newPool func() *warmPool[T]) {
	dp.mu.Lock()
	if dp.closed {
		dp.mu.Unlock()
		return
	}
	if dp.pools == nil {
		dp.pools = map[depsKey[P]]*warmPool[T]{}
	}
	pl := dp.pools[k]
	if pl == nil || pl.isRetired() {
		pl = newPool()
		dp.pools[k] = pl
	}
	dp.keys = append(slices.DeleteFunc(dp.keys, func(o depsKey[P]) bool { return o == k }), k)
	for len(dp.keys) > maxDepsPools {
		old := dp.pools[dp.keys[0]]
		delete(dp.pools, dp.keys[0])
		dp.keys = dp.keys[1:]
		// Counted under the lock: close, which takes it, comes after,
		// and so does the runner's wait for bg.
		bg.Add(1)
		go func() {
			defer bg.Done()
			old.close()
		}()
	}
	dp.mu.Unlock()
	pl.replenish()
}

// all lists the pools.
func (dp *depsPools[P, T]) all() []*warmPool[T] {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	var out []*warmPool[T]
	for _, k := range dp.keys {
		out = append(out, dp.pools[k])
	}
	return out
}

// close closes every pool; none is made after it.
func (dp *depsPools[P, T]) close() {
	dp.mu.Lock()
	dp.closed = true
	pools := dp.pools
	dp.pools, dp.keys = nil, nil
	dp.mu.Unlock()
	for _, pl := range pools {
		pl.close()
	}
}
