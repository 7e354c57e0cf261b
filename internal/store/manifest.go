package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"

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
}

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
	sort.Slice(p.blobs, func(i, j int) bool { return p.blobs[i].hash < p.blobs[j].hash })
	p.id = manifestID(p.entries)
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
