package activities

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/sandbox"
)

// evicting is held by the eviction under way in this process: a check that
// finds one running leaves the work to it.
var evicting sync.Mutex

// depsInUse is how long after its last use an install is never evicted: a
// check that found it may still be running its tests over it.
const depsInUse = time.Hour

// Prefixes of the names under the installs' directory that are not kept
// installs: one under way (runInstall), one being evicted.
const (
	installingPrefix = ".install-"
	evictingPrefix   = ".evict-"
)

// evictionLock is the file under the installs' directory whose lock an
// eviction holds, so that the workers sharing the directory evict one at
// a time.
const evictionLock = ".evict.lock"

// lockEviction takes the installs' eviction lock for this process
// (flock, released by the kernel if the process dies) unless another
// process holds it, which reports false: its eviction does the work.
func lockEviction(root string) (unlock func(), ok bool) {
	f, err := os.OpenFile(filepath.Join(root, evictionLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		slog.Warn("lock the installs for eviction", "dir", root, "error", err)
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			slog.Warn("lock the installs for eviction", "dir", root, "error", err)
		}
		return nil, false
	}
	return func() { f.Close() }, true
}

// useInstall marks dir as used now, which keeps it from eviction for
// depsInUse, and says whether it is still there: an install evicted since
// it was found is installed again.
func useInstall(dir string) bool {
	now := time.Now()
	return os.Chtimes(dir, now, now) == nil
}

// evictInstalls removes the installs under root used least recently until
// the rest fit in limit bytes, keeping any used within depsInUse of now
// (and so the one just made); it also removes what crashed installs and
// evictions left behind. limit 0 keeps everything. It returns the
// installs it removed. An install is renamed away before it is removed,
// so a check never finds half of one.
func evictInstalls(root string, limit int64, now time.Time, remove func(dir string) bool) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("evict installs: %w", err)
	}
	type install struct {
		name string
		used time.Time
		size int64
	}
	var installs []install
	var total int64
	for _, e := range entries {
		name := e.Name()
		fi, err := e.Info()
		if err != nil || !fi.IsDir() || !ownedByWorker(fi) {
			continue
		}
		switch {
		case strings.HasPrefix(name, evictingPrefix):
			remove(filepath.Join(root, name))
			continue
		case strings.HasPrefix(name, installingPrefix):
			if now.Sub(fi.ModTime()) > depsInUse {
				remove(filepath.Join(root, name))
			}
			continue
		}
		size := treeSize(filepath.Join(root, name))
		installs = append(installs, install{name: name, used: fi.ModTime(), size: size})
		total += size
	}
	slices.SortFunc(installs, func(a, b install) int { return a.used.Compare(b.used) })
	var removed []string
	for _, in := range installs {
		if total <= limit {
			break
		}
		path := filepath.Join(root, in.name)
		// A check may have used it since it was listed (sizes take a
		// while): its time is read again just before it goes.
		if fi, err := os.Lstat(path); err != nil || time.Since(fi.ModTime()) < depsInUse || now.Sub(in.used) < depsInUse {
			continue
		}
		gone := filepath.Join(root, evictingPrefix+in.name)
		if err := os.Rename(path, gone); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				slog.Warn("evict an install", "dir", path, "error", err)
			}
			continue
		}
		if !remove(gone) {
			// It could not be removed: it stays, usable.
			if err := os.Rename(gone, path); err != nil {
				slog.Warn("put back an install that could not be evicted", "dir", path, "error", err)
			}
			continue
		}
		removed = append(removed, in.name)
		total -= in.size
	}
	if total > limit {
		slog.Warn("installed dependencies are over their size limit: every install left was used within the last hour",
			"dir", root, "size", total, "limit", limit)
	}
	return removed, nil
}

// removeInstall removes what an install left and says whether it is gone.
// What the sandbox's user wrote may not be the worker's to remove (a
// worker that is not root, running docker sandboxes): a sandbox run, as
// that user, empties it first. profile is the sandbox to run it in.
func (a *Activities) removeInstall(profile string) func(dir string) bool {
	return func(dir string) bool {
		err := os.RemoveAll(dir)
		if err != nil && a.Sandbox != nil {
			if serr := a.emptyInSandbox(profile, dir); serr != nil {
				slog.Warn("empty an install in the sandbox", "dir", dir, "error", serr)
			}
			err = os.RemoveAll(dir)
		}
		if err != nil {
			slog.Warn("remove an install", "dir", dir, "error", err)
			return false
		}
		return true
	}
}

// emptyInSandbox removes what is in dir as the sandbox's user, who wrote
// it: the directory itself, the worker's, is made writable to that user
// for the run. What the run cannot remove is left to the caller.
func (a *Activities) emptyInSandbox(profile, dir string) error {
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	// What is left stays the worker's alone to change, as an install is.
	defer os.Chmod(dir, 0o755)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Read-only directories (a module cache's) are made writable first.
	res, err := a.Sandbox.Run(ctx, sandbox.Spec{Profile: profile, Deps: dir, DepsWritable: true, Limits: a.limits(),
		Cmd: []string{"sh", "-c", `chmod -R u+w "$1" 2>/dev/null; rm -rf -- "$1"/* "$1"/.[!.]* "$1"/..?*`, "sh", lang.DepsDir}})
	if err != nil {
		return err
	}
	if !succeeded(res) {
		return fmt.Errorf("exit %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return nil
}

// treeSize is the bytes of the regular files under dir.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts count as empty
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
