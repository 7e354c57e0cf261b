package activities

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
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
func evictInstalls(root string, limit int64, now time.Time) ([]string, error) {
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
			removeInstall(filepath.Join(root, name))
			continue
		case strings.HasPrefix(name, installingPrefix):
			if now.Sub(fi.ModTime()) > depsInUse {
				removeInstall(filepath.Join(root, name))
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
		if !removeInstall(gone) {
			// Not the worker's to remove (the sandbox's user wrote it, and
			// the worker is not root): it stays, usable.
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

// removeInstall removes what an install left and says whether it is gone;
// files the sandbox's user wrote may not be the worker's to remove, which
// is logged.
func removeInstall(dir string) bool {
	if err := os.RemoveAll(dir); err != nil {
		slog.Warn("remove an install", "dir", dir, "error", err)
		return false
	}
	return true
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
