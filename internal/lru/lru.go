// Package lru is a cache that keeps the values used most recently within a
// bound on the sum of their sizes.
package lru

import "sync"

// Cache maps keys to values, dropping the least recently used ones past
// its limit. Values are shared with callers, who must not change them. The
// zero value, with Limit and Size set or not, is ready to use.
type Cache[V any] struct {
	// Limit bounds the sum of the values' sizes; a value larger than the
	// limit is not kept. Zero keeps nothing.
	Limit int
	// Size measures a value; nil counts each value as 1.
	Size func(V) int

	mu      sync.Mutex
	entries []entry[V] // most recently used last
	total   int
}

type entry[V any] struct {
	key   string
	value V
	size  int
}

// Get returns the value kept under key, now the most recently used.
func (c *Cache[V]) Get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, e := range c.entries {
		if e.key == key {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			return e.value, true
		}
	}
	var zero V
	return zero, false
}

// Put keeps value under key, unless key is kept already, and drops the
// least recently used values until the rest fit the limit.
func (c *Cache[V]) Put(key string, value V) {
	size := 1
	if c.Size != nil {
		size = c.Size(value)
	}
	if size > c.Limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.key == key {
			return
		}
	}
	c.entries = append(c.entries, entry[V]{key: key, value: value, size: size})
	c.total += size
	for c.total > c.Limit {
		c.total -= c.entries[0].size
		c.entries = c.entries[1:]
	}
}

// Len returns how many values are kept, and the sum of their sizes.
func (c *Cache[V]) Len() (n, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), c.total
}
