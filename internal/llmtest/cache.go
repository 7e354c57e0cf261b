package llmtest

import (
	"crypto/sha256"
	"sync"
)

// Prompt caching, the way the APIs document it.
//
// OpenAI caches every prompt of 1024 tokens or more on its own: a later
// prompt starting with the same tools and messages reports the length of
// the longest prefix seen before as usage.prompt_tokens_details
// .cached_tokens, from 1024 tokens up in steps of 128.
//
// Anthropic caches at the breakpoints a request marks (cache_control, at
// most four): the prompt, in the order tools, system, messages, up to and
// including the marked block is written to the cache when it is at least
// 1024 tokens long, and a later request reads back the longest prefix
// ending within 20 blocks before one of its breakpoints that was written
// before. The usage then splits the input into cache_read_input_tokens,
// cache_creation_input_tokens (from the read prefix up to the last
// breakpoint) and input_tokens (after the last breakpoint).
//
// Entries here never expire: a test runs well within the five minutes
// both APIs keep an entry at least.
const (
	minCachedTokens  = 1024
	openAICacheStep  = 128
	maxBreakpoints   = 4
	breakpointLookup = 20
)

// promptUnit is one cacheable piece of a prompt: a tool, a system block, a
// message (OpenAI) or a content block (Anthropic). Key is its content as
// the server compares it; Tokens what it adds to the prompt.
type promptUnit struct {
	Key        []byte
	Tokens     int
	Breakpoint bool
}

// promptCache holds the prefixes written, by the hash of the prefix.
type promptCache struct {
	mu      sync.Mutex
	entries map[[32]byte]bool
}

// prefixes returns, for each unit, the hash of the prompt up to and
// including it and the tokens up to and including it.
func prefixes(units []promptUnit, base int) ([][32]byte, []int) {
	hashes := make([][32]byte, len(units))
	tokens := make([]int, len(units))
	var prev [32]byte
	total := base
	for i, u := range units {
		h := sha256.New()
		h.Write(prev[:])
		h.Write(u.Key)
		copy(hashes[i][:], h.Sum(nil))
		prev = hashes[i]
		total += u.Tokens
		tokens[i] = total
	}
	return hashes, tokens
}

// automatic is OpenAI's caching: it returns the cached tokens of a prompt
// whose units cost base tokens more than their own, and remembers every
// prefix of it.
func (c *promptCache) automatic(units []promptUnit, base int) int {
	hashes, tokens := prefixes(units, base)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[32]byte]bool{}
	}
	hit := 0
	for i := range units {
		if !c.entries[hashes[i]] {
			break
		}
		hit = tokens[i]
	}
	for i := range units {
		c.entries[hashes[i]] = true
	}
	if hit < minCachedTokens {
		return 0
	}
	return minCachedTokens + (hit-minCachedTokens)/openAICacheStep*openAICacheStep
}

// explicit is Anthropic's caching at breakpoints: it returns the tokens
// read from the cache and written to it.
func (c *promptCache) explicit(units []promptUnit, base int) (read, written int) {
	hashes, tokens := prefixes(units, base)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[32]byte]bool{}
	}
	last := -1
	for b, u := range units {
		if !u.Breakpoint {
			continue
		}
		last = b
		for i := b; i >= 0 && i >= b-breakpointLookup; i-- {
			if c.entries[hashes[i]] {
				read = max(read, tokens[i])
				break
			}
		}
	}
	for b, u := range units {
		if u.Breakpoint && tokens[b] >= minCachedTokens {
			c.entries[hashes[b]] = true
		}
	}
	if last >= 0 && tokens[last] >= minCachedTokens {
		written = max(tokens[last]-read, 0)
	}
	return read, written
}
