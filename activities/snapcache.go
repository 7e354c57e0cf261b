package activities

import (
	"cmp"
	"context"
	"sync"

	"github.com/autocoder/autocoder/internal/lru"
	"github.com/autocoder/autocoder/internal/workspace"
)

// snapshotCacheBytes bounds the file contents snapshotCache keeps.
const snapshotCacheBytes = 64 << 20

// snapshotCache keeps the snapshots activities read most recently. A tool
// loop reads the same workspace call after call (tools, runs, checks), and
// loading a large one from the store costs far more than a call itself;
// snapshots are immutable by their content address, so a cached one is
// never stale. Its files are shared between callers, who must not change
// them. The zero value is ready to use.
type snapshotCache struct {
	limit int // bytes of file contents; zero means snapshotCacheBytes
	once  sync.Once
	files lru.Cache[[]workspace.File]
}

func (c *snapshotCache) cache() *lru.Cache[[]workspace.File] {
	c.once.Do(func() {
		c.files.Limit, c.files.Size = cmp.Or(c.limit, snapshotCacheBytes), contentBytes
	})
	return &c.files
}

func (c *snapshotCache) get(id string) ([]workspace.File, bool) { return c.cache().Get(id) }

func (c *snapshotCache) put(id string, files []workspace.File) { c.cache().Put(id, files) }

func contentBytes(files []workspace.File) int {
	n := 0
	for _, f := range files {
		n += len(f.Data)
	}
	return n
}

// cachedFiles loads a snapshot through the cache. Its files are shared:
// callers read them and build new slices, never change them.
func (a *Activities) cachedFiles(ctx context.Context, id string) ([]workspace.File, error) {
	if files, ok := a.snapshots.get(id); ok {
		return files, nil
	}
	files, err := a.loadFiles(ctx, id)
	if err != nil {
		return nil, err
	}
	a.snapshots.put(id, files)
	return files, nil
}

// putChanged stores next, what the workspace of snapshot base (holding
// before) became, as base and the change between them, so that only the
// change is hashed and written, and caches it for the next call. An empty
// base is the empty workspace of a new project.
func (a *Activities) putChanged(ctx context.Context, base string, before, next []workspace.File) (string, error) {
	var id string
	var err error
	if base == "" {
		id, err = a.Store.PutSnapshot(ctx, next)
	} else {
		writes, deletes := workspace.Changes(before, next)
		id, err = a.Store.PutSnapshotDelta(ctx, base, writes, deletes)
	}
	if err != nil {
		return "", err
	}
	a.snapshots.put(id, next)
	return id, nil
}
