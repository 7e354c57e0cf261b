package store

import "sync"

// manifestCacheSize is how many manifests a store keeps in memory.
const manifestCacheSize = 8

// manifestCache keeps the manifests of the snapshots this process stored
// or changed most recently. A tool loop's next change is over its last
// one, and reading the base's manifest back is otherwise most of what
// storing a change costs. A manifest never changes under its id, so a kept
// one is never stale. The zero value is ready to use.
type manifestCache struct {
	mu      sync.Mutex
	entries []cachedManifest // most recently used last
}

type cachedManifest struct {
	id      string
	entries []Entry // path order; shared, never changed
}

func (c *manifestCache) get(id string) ([]Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.entries {
		if m.id == id {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), m)
			return m.entries, true
		}
	}
	return nil, false
}

func (c *manifestCache) put(id string, entries []Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.entries {
		if m.id == id {
			return
		}
	}
	c.entries = append(c.entries, cachedManifest{id: id, entries: entries})
	if len(c.entries) > manifestCacheSize {
		c.entries = c.entries[1:]
	}
}
