package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// AppendEntries implements TranscriptStore.
func (s *SQLite) AppendEntries(ctx context.Context, id string, pos int, entries [][]byte) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("append to transcript %s: begin: %w", id, err)
	}
	defer func() { _ = tx.Rollback() }() // no-op after Commit
	hashes, err := appendEntries(ctx, sqliteTranscriptTx{tx}, id, pos, entries)
	if err != nil {
		return nil, fmt.Errorf("append to transcript %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("append to transcript %s: commit: %w", id, err)
	}
	return hashes, nil
}

type sqliteTranscriptTx struct{ tx *sql.Tx }

func (t sqliteTranscriptTx) length(ctx context.Context, id string) (int, error) {
	var n int
	err := t.tx.QueryRowContext(ctx, `SELECT count(*) FROM transcript_entries WHERE transcript_id = ?`, id).Scan(&n)
	return n, err
}

func (t sqliteTranscriptTx) putBlob(ctx context.Context, hash string, data []byte) error {
	_, err := t.tx.ExecContext(ctx, `INSERT INTO blobs (hash, data, size) VALUES (?, ?, ?) ON CONFLICT (hash) DO NOTHING`, hash, data, len(data))
	return err
}

func (t sqliteTranscriptTx) insertEntry(ctx context.Context, id string, pos int, hash string) (string, error) {
	var have string
	err := t.tx.QueryRowContext(ctx, `INSERT INTO transcript_entries (transcript_id, position, hash) VALUES (?, ?, ?)
		ON CONFLICT (transcript_id, position) DO NOTHING RETURNING hash`, id, pos, hash).Scan(&have)
	if errors.Is(err, sql.ErrNoRows) { // taken: read what holds it
		err = t.tx.QueryRowContext(ctx, `SELECT hash FROM transcript_entries WHERE transcript_id = ? AND position = ?`, id, pos).Scan(&have)
	}
	return have, err
}

// Transcript implements TranscriptStore.
func (s *SQLite) Transcript(ctx context.Context, id string) ([]TranscriptEntry, error) {
	rs, err := s.db.QueryContext(ctx, `SELECT e.hash, b.data FROM transcript_entries e JOIN blobs b ON b.hash = e.hash
		WHERE e.transcript_id = ? ORDER BY e.position`, id)
	if err == nil {
		defer rs.Close()
	}
	return transcriptOf(id, rs, err)
}
