package store

import (
	"context"
	"errors"
	"fmt"
)

// TranscriptEntry is one entry of a transcript: its content and the hex
// sha256 that addresses it.
type TranscriptEntry struct {
	Hash string
	Data []byte
}

// ErrTranscriptConflict reports an append that does not fit the
// transcript: another entry already holds the position, or the position
// is past the end. It means the caller's idea of the transcript is stale.
var ErrTranscriptConflict = errors.New("transcript conflict")

// TranscriptConflictError says where and why an append did not fit; it
// matches ErrTranscriptConflict.
type TranscriptConflictError struct {
	Transcript string
	Position   int
	Length     int    // entries the transcript held when the append was refused
	Have, Want string // the stored and the offered hash; Have is empty past the end
}

func (e *TranscriptConflictError) Error() string {
	if e.Have == "" {
		return fmt.Sprintf("transcript %s: cannot append at position %d: it has %d entries", e.Transcript, e.Position, e.Length)
	}
	return fmt.Sprintf("transcript %s: position %d holds entry %.12s, not %.12s", e.Transcript, e.Position, e.Have, e.Want)
}

func (e *TranscriptConflictError) Is(target error) bool { return target == ErrTranscriptConflict }

// TranscriptStore is the transcript half of the Store contract: a
// conversation kept as an append-only list of content-addressed entries.
type TranscriptStore interface {
	// AppendEntries puts entries at positions pos, pos+1, … of transcript
	// id, all or none. An entry already stored at its position is a no-op,
	// so a retried append changes nothing; a different entry there, or pos
	// past the end, is a *TranscriptConflictError. It returns the entries'
	// hashes. A transcript exists from its first append.
	AppendEntries(ctx context.Context, id string, pos int, entries [][]byte) ([]string, error)
	// Transcript returns the entries in order; an unknown id has none.
	Transcript(ctx context.Context, id string) ([]TranscriptEntry, error)
}

// transcriptTx is what appendEntries needs of a backend's transaction.
type transcriptTx interface {
	length(ctx context.Context, id string) (int, error)
	putBlob(ctx context.Context, hash string, data []byte) error
	// insertEntry inserts unless the position is taken, and returns the
	// hash the position holds afterwards.
	insertEntry(ctx context.Context, id string, pos int, hash string) (string, error)
}

// appendEntries is AppendEntries inside a backend's transaction.
func appendEntries(ctx context.Context, tx transcriptTx, id string, pos int, entries [][]byte) ([]string, error) {
	if id == "" || pos < 0 {
		return nil, fmt.Errorf("append to transcript %q at %d: need an id and a position of 0 or more", id, pos)
	}
	n, err := tx.length(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("transcript length: %w", err)
	}
	hashes := make([]string, len(entries))
	for i, data := range entries {
		hashes[i] = hashData(data)
	}
	if pos > n {
		return nil, &TranscriptConflictError{Transcript: id, Position: pos, Length: n}
	}
	for i, data := range entries {
		if err := tx.putBlob(ctx, hashes[i], nonNil(data)); err != nil {
			return nil, fmt.Errorf("insert entry blob: %w", err)
		}
		have, err := tx.insertEntry(ctx, id, pos+i, hashes[i])
		if err != nil {
			return nil, fmt.Errorf("insert entry: %w", err)
		}
		if have != hashes[i] {
			return nil, &TranscriptConflictError{Transcript: id, Position: pos + i, Length: max(n, pos+i), Have: have, Want: hashes[i]}
		}
	}
	return hashes, nil
}

// transcriptOf reads the (hash, data) rows of a transcript query, in
// position order, checking each blob against its hash.
func transcriptOf(id string, rs rows, err error) ([]TranscriptEntry, error) {
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", id, err)
	}
	entries := []TranscriptEntry{}
	for rs.Next() {
		var e TranscriptEntry
		if err := rs.Scan(&e.Hash, &e.Data); err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", id, err)
		}
		if err := verifyBlob(e.Hash, e.Data); err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", id, err)
		}
		e.Data = nonNil(e.Data)
		entries = append(entries, e)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", id, err)
	}
	return entries, nil
}
