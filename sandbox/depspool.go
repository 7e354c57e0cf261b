package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// maxDepsPools bounds the installs that have warm containers at once; the
// least recently used one's containers go first.
const maxDepsPools = 4

// depsKey is what must match for a warm container made for one run that
// mounts an install to serve another: the pool's key, the install's
// directory as the mount saw it (its device and inode, so an install
// removed and made again at the same path is another), and the rest of
// the run's additions.
type depsKey struct {
	poolKey
	deps, dir, link, env string
}

// depsKeyOf is the key of a run's install, and false for a run without
// one, one that reaches the proxy and one that may write its install:
// those take no container made after another run.
func depsKeyOf(j job) (depsKey, bool) {
	x := j.extra
	if x.deps == "" || x.depsWritable || j.route != nil {
		return depsKey{}, false
	}
	dir, ok := installIdentity(x.deps)
	if !ok {
		return depsKey{}, false
	}
	return depsKey{poolKey: newPoolKey(j.profile, j.image, j.limits), deps: x.deps,
		dir: dir, link: x.link, env: strings.Join(x.env, "\x00")}, true
}

// current reports whether the install the key names is still there, the
// same directory.
func (k depsKey) current() bool {
	dir, ok := installIdentity(k.deps)
	return ok && dir == k.dir
}

// installIdentity names the directory at path as a mount of it sees it:
// its device and inode.
func installIdentity(path string) (string, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), true
}

// depsPools keeps one warm container for each of the installs most
// recently run with: the checks of a task that declares dependencies run
// again and again over the same install, and without these each would
// create and start a container (the profile's own pools are made before
// any install is known, and a container's mounts are fixed at creation).
type depsPools struct {
	mu     sync.Mutex
	closed bool
	keys   []depsKey // least recently used first
	pools  map[depsKey]*warmPool[*box]
}

// take returns a warm container for the key, if one is ready.
func (dp *depsPools) take(k depsKey) (*box, bool) {
	dp.mu.Lock()
	pl := dp.pools[k]
	dp.mu.Unlock()
	if pl == nil {
		return nil, false
	}
	return pl.take()
}

// replenish refills the key's pool, making it (with newPool) if it is new
// and closing the least recently used one beyond maxDepsPools in the
// background, counted in bg: a pool's close waits for a launch under way.
func (dp *depsPools) replenish(k depsKey, bg *sync.WaitGroup, newPool func() *warmPool[*box]) {
	dp.mu.Lock()
	if dp.closed {
		dp.mu.Unlock()
		return
	}
	if dp.pools == nil {
		dp.pools = map[depsKey]*warmPool[*box]{}
	}
	pl := dp.pools[k]
	if pl == nil || pl.isRetired() {
		pl = newPool()
		dp.pools[k] = pl
	}
	dp.keys = append(slices.DeleteFunc(dp.keys, func(o depsKey) bool { return o == k }), k)
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
func (dp *depsPools) all() []*warmPool[*box] {
	dp.mu.Lock()
	defer dp.mu.Unlock()
	var out []*warmPool[*box]
	for _, k := range dp.keys {
		out = append(out, dp.pools[k])
	}
	return out
}

// close closes every pool; none is made after it.
func (dp *depsPools) close() {
	dp.mu.Lock()
	dp.closed = true
	pools := dp.pools
	dp.pools, dp.keys = nil, nil
	dp.mu.Unlock()
	for _, pl := range pools {
		pl.close()
	}
}
