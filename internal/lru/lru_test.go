package lru

import "testing"

// The cache keeps the most recently used values within its limit and never
// one larger than the limit.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := Cache[string]{Limit: 100, Size: func(s string) int { return len(s) }}
	c.Put("a", string(make([]byte, 40)))
	c.Put("b", string(make([]byte, 40)))
	if _, ok := c.Get("a"); !ok { // a is now the most recent
		t.Fatal("a missing")
	}
	c.Put("c", string(make([]byte, 40))) // over the limit: b goes
	if _, ok := c.Get("b"); ok {
		t.Fatal("b kept past the limit")
	}
	for _, k := range []string{"a", "c"} {
		if v, ok := c.Get(k); !ok || len(v) != 40 {
			t.Fatalf("%s missing", k)
		}
	}
	c.Put("huge", string(make([]byte, 101)))
	if _, ok := c.Get("huge"); ok {
		t.Fatal("a value over the limit was kept")
	}
	if n, size := c.Len(); n != 2 || size != 80 {
		t.Fatalf("kept %d values of %d bytes, want 2 of 80", n, size)
	}
	c.Put("a", "replaced?")
	if v, _ := c.Get("a"); len(v) != 40 {
		t.Fatal("a second put under a kept key replaced its value")
	}
}

// Without Size each value counts 1.
func TestCacheCountsValues(t *testing.T) {
	c := Cache[int]{Limit: 2}
	c.Put("1", 1)
	c.Put("2", 2)
	c.Put("3", 3)
	if _, ok := c.Get("1"); ok {
		t.Fatal("1 kept past the limit")
	}
	if v, ok := c.Get("3"); !ok || v != 3 {
		t.Fatal("3 missing")
	}
}
