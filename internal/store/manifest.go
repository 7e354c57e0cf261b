package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/autocoder/autocoder/internal/lru"
	"github.com/autocoder/autocoder/internal/workspace"
)

// ErrInvalidSnapshot reports files PutSnapshot refuses: an unsafe or
// duplicate path, or a breach of workspace.DefaultLimits. The underlying
// error stays in the chain, so errors.Is(err, workspace.ErrUnsafePath) works.
var ErrInvalidSnapshot = errors.New("invalid snapshot")

// ErrCorrupt reports stored content that no longer matches its hash.
var ErrCorrupt = errors.New("corrupt blob")

// blob is one distinct content of a snapshot.
type blob struct {
	hash string
	data []byte
}

// plan is a validated snapshot, ready for a backend to write.
type plan struct {
	id      string
	entries []Entry // path order
	blobs   []blob  // distinct, hash order so concurrent writers lock rows alike

	// A plan made over a base snapshot (depth > 0) writes only what
	// changed from it: the entries added and the paths deleted. Otherwise
	// added is every entry.
	base    string
	depth   int
	added   []Entry  // path order
	deleted []string // path order
}

// manifestCacheSize is how many manifests a store keeps in memory: those
// of the snapshots this process stored or changed most recently. A tool
// loop's next change is over its last one, and reading the base's
// manifest back is otherwise most of what storing a change costs. A
// manifest never changes under its id, so a kept one is never stale.
const manifestCacheSize = 8

// maxDepth bounds the layers under a snapshot, and so what reading one
// costs: a change over a snapshot this deep is stored whole.
const maxDepth = 16

func hashData(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// manifestID hashes the canonical manifest: one "path\x00mode\x00hash\n"
// line per entry in path order, mode in octal without a prefix.
func manifestID(entries []Entry) string {
	h := sha256.New()
	var line []byte
	for _, e := range entries {
		line = append(line[:0], e.Path...)
		line = append(line, 0)
		line = strconv.AppendUint(line, uint64(e.Mode), 8)
		line = append(line, 0)
		line = append(line, e.Hash...)
		line = append(line, '\n')
		h.Write(line)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// planSnapshot validates files and derives the manifest, id and distinct
// blobs. Modes are normalised with File.FileMode, so 0 is stored as 0o644.
func planSnapshot(files []workspace.File) (plan, error) {
	if err := workspace.DefaultLimits.Check(files); err != nil {
		return plan{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	sorted := make([]workspace.File, len(files))
	copy(sorted, files)
	workspace.Sort(sorted)

	p := plan{entries: make([]Entry, len(sorted))}
	seen := make(map[string]bool, len(sorted))
	for i, f := range sorted {
		h := hashData(f.Data)
		p.entries[i] = Entry{Path: f.Path, Hash: h, Mode: f.FileMode(), Size: int64(len(f.Data))}
		if !seen[h] {
			seen[h] = true
			p.blobs = append(p.blobs, blob{hash: h, data: nonNil(f.Data)})
		}
	}
	sortBlobs(p.blobs)
	p.id = manifestID(p.entries)
	p.added = p.entries
	return p, nil
}

func sortBlobs(blobs []blob) {
	sort.Slice(blobs, func(i, j int) bool { return blobs[i].hash < blobs[j].hash })
}

// planDelta validates the snapshot that base (its manifest, in path order,
// and the layers under it) becomes with writes put in and deletes taken
// out, and derives it hashing only what was written. The result is the
// plan planSnapshot makes of the same files, stored over the base unless
// the base is maxDepth deep.
func planDelta(base Manifest, baseDepth int, writes []workspace.File, deletes []string) (plan, error) {
	p := plan{base: base.ID, depth: baseDepth + 1}
	changed := make(map[string]bool, len(writes)+len(deletes))
	for _, d := range deletes {
		if changed[d] {
			return plan{}, fmt.Errorf("%w: %q is deleted twice", ErrInvalidSnapshot, d)
		}
		changed[d] = true
	}
	written := make(map[string]bool, len(writes))
	seen := map[string]bool{} // blob hashes
	for _, f := range writes {
		if changed[f.Path] {
			return plan{}, fmt.Errorf("%w: %q is both written and deleted, or written twice", ErrInvalidSnapshot, f.Path)
		}
		changed[f.Path], written[f.Path] = true, true
		h := hashData(f.Data)
		p.added = append(p.added, Entry{Path: f.Path, Hash: h, Mode: f.FileMode(), Size: int64(len(f.Data))})
		if !seen[h] {
			seen[h] = true
			p.blobs = append(p.blobs, blob{hash: h, data: nonNil(f.Data)})
		}
	}
	sortEntries(p.added)
	sortBlobs(p.blobs)

	p.entries = make([]Entry, 0, len(base.Entries)+len(p.added))
	for _, e := range base.Entries {
		switch {
		case !changed[e.Path]:
			p.entries = append(p.entries, e)
		case !written[e.Path]:
			p.deleted = append(p.deleted, e.Path)
		}
	}
	if len(p.deleted) < len(deletes) {
		return plan{}, fmt.Errorf("%w: a path to delete is not in snapshot %s", ErrInvalidSnapshot, base.ID)
	}
	p.entries = append(p.entries, p.added...)
	sortEntries(p.entries)

	// The base's files are known by hash only: the check takes a HEAD or
	// commondir among them the cautious way.
	leads := make(map[string][]byte)
	for _, f := range writes {
		if lead := workspace.GitLead(f.Path, f.Data); lead != nil {
			leads[f.Path] = lead
		}
	}
	sized := make([]workspace.Sized, len(p.entries))
	for i, e := range p.entries {
		sized[i] = workspace.Sized{Path: e.Path, Size: e.Size, Mode: e.Mode, Lead: leads[e.Path]}
	}
	if err := workspace.DefaultLimits.CheckSized(sized); err != nil {
		return plan{}, fmt.Errorf("%w: %w", ErrInvalidSnapshot, err)
	}
	p.id = manifestID(p.entries)
	if p.depth > maxDepth { // whole; the base's blobs are stored already
		p.base, p.depth, p.added, p.deleted = "", 0, p.entries, nil
	}
	return p, nil
}

func sortEntries(entries []Entry) {
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
}

// planFromBase reads the base's depth and manifest, the manifest from
// cache when it holds it, and plans the delta over it.
func planFromBase(ctx context.Context, r entryReader, cache *lru.Cache[[]Entry], base string, writes []workspace.File, deletes []string) (plan, error) {
	depth, err := r.depth(ctx, base) // also says the base is there
	if err != nil {
		return plan{}, fmt.Errorf("put snapshot over %s: %w", base, err)
	}
	entries, ok := cache.Get(base)
	if !ok {
		m, err := getManifest(ctx, r, base)
		if err != nil {
			return plan{}, fmt.Errorf("put snapshot over %s: %w", base, err)
		}
		entries = m.Entries
		cache.Put(base, entries)
	}
	p, err := planDelta(Manifest{ID: base, Entries: entries}, depth, writes, deletes)
	if err != nil {
		return plan{}, fmt.Errorf("put snapshot over %s: %w", base, err)
	}
	return p, nil
}

// verifyBlob checks content read back from a backend against its address.
func verifyBlob(hash string, data []byte) error {
	if got := hashData(data); got != hash {
		return fmt.Errorf("%w: %s hashes to %s", ErrCorrupt, hash, got)
	}
	return nil
}

// fileOf turns a manifest entry and its blob into a verified file.
func fileOf(e Entry, data []byte) (workspace.File, error) {
	if int64(len(data)) != e.Size {
		return workspace.File{}, fmt.Errorf("%w: %s holds %d bytes, manifest says %d", ErrCorrupt, e.Path, len(data), e.Size)
	}
	if err := verifyBlob(e.Hash, data); err != nil {
		return workspace.File{}, fmt.Errorf("%s: %w", e.Path, err)
	}
	return workspace.File{Path: e.Path, Mode: e.Mode, Data: nonNil(data)}, nil
}
