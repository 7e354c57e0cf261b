// Package store keeps what must outlive a process and stay out of workflow
// history: file contents as content-addressed blobs, snapshot manifests,
// memoized results, lessons, and the transcripts of model conversations.
// SQLite is the embedded default; Postgres serves teams.
package store

import (
	"context"
	"errors"

	"github.com/autocoder/autocoder/internal/workspace"
)

// ErrNotFound reports an unknown snapshot, blob or key.
var ErrNotFound = errors.New("not found")

// Entry is one file of a snapshot manifest.
type Entry struct {
	Path string
	Hash string // hex sha256 of the content
	Mode uint32
	Size int64
}

// Manifest lists a snapshot's files in path order.
type Manifest struct {
	ID      string
	Entries []Entry
}

// Stats describes what the store holds, for dedup measurements.
type Stats struct {
	Blobs     int64
	BlobBytes int64
	Snapshots int64
}

// Store is the contract both backends satisfy.
type Store interface {
	// PutSnapshot stores the files and returns the snapshot id, the hex
	// sha256 of the canonical manifest: the same files give the same id.
	// The write is atomic: a snapshot is visible whole or not at all.
	PutSnapshot(ctx context.Context, files []workspace.File) (string, error)
	// PutSnapshotDelta stores the snapshot that base becomes with writes
	// put in (new files, or new content or mode of the base's) and the
	// paths in deletes taken out, and returns the id PutSnapshot gives
	// the same files. Only what is written is hashed and stored, as a layer
	// over the base, so a small change to a large workspace costs about
	// what the change does; reads see the layers merged. An unknown base is
	// ErrNotFound; a path both written and deleted, a deleted path the base
	// lacks, or a result PutSnapshot would refuse is ErrInvalidSnapshot.
	PutSnapshotDelta(ctx context.Context, base string, writes []workspace.File, deletes []string) (string, error)
	GetSnapshot(ctx context.Context, id string) ([]workspace.File, error)
	GetManifest(ctx context.Context, id string) (Manifest, error)
	GetBlob(ctx context.Context, hash string) ([]byte, error)

	// Memo is a small key/value table for idempotent activity results.
	// A memo outlives the process that wrote it but, being a cache, not
	// necessarily a crash of the machine or the database server: its
	// write does not wait for the disk.
	PutMemo(ctx context.Context, key string, value []byte) error
	GetMemo(ctx context.Context, key string) ([]byte, error) // ErrNotFound when absent

	Stats(ctx context.Context) (Stats, error)
	// ID tells this store from every other: made with the schema, it stays
	// for the store's life. A client and the workers of a cluster must
	// use one store, and compare IDs to find out.
	ID(ctx context.Context) (string, error)
	Close() error

	LessonStore
	TranscriptStore
}

// writeStepHook, when the package's tests set it, runs at each named step of
// a snapshot write ("snapshot row", "entries", "committed"), so a test can
// kill the process at a point it chooses instead of one it hopes to hit.
var writeStepHook func(step string)

func writeStep(step string) {
	if writeStepHook != nil {
		writeStepHook(step)
	}
}
