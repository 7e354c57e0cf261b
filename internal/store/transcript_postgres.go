package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AppendEntries implements TranscriptStore. Two writers racing for one
// position queue on its primary key; the second then finds the first's
// entry and reports a conflict unless it is the same.
func (s *Postgres) AppendEntries(ctx context.Context, id string, pos int, entries [][]byte) ([]string, error) {
	var hashes []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		hashes, err = appendEntries(ctx, pgTranscriptTx{tx}, id, pos, entries)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("append to transcript %s: %w", id, err)
	}
	return hashes, nil
}

type pgTranscriptTx struct{ tx pgx.Tx }

func (t pgTranscriptTx) length(ctx context.Context, id string) (int, error) {
	var n int
	err := t.tx.QueryRow(ctx, `SELECT count(*) FROM transcript_entries WHERE transcript_id = $1`, id).Scan(&n)
	return n, err
}

func (t pgTranscriptTx) putBlob(ctx context.Context, hash string, data []byte) error {
	_, err := t.tx.Exec(ctx, `INSERT INTO blobs (hash, data, size) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING`, hash, data, len(data))
	return err
}

func (t pgTranscriptTx) insertEntry(ctx context.Context, id string, pos int, hash string) (string, error) {
	var have string
	err := t.tx.QueryRow(ctx, `INSERT INTO transcript_entries (transcript_id, position, hash) VALUES ($1, $2, $3)
		ON CONFLICT (transcript_id, position) DO NOTHING RETURNING hash`, id, pos, hash).Scan(&have)
	if errors.Is(err, pgx.ErrNoRows) { // taken: read what holds it
		err = t.tx.QueryRow(ctx, `SELECT hash FROM transcript_entries WHERE transcript_id = $1 AND position = $2`, id, pos).Scan(&have)
	}
	return have, err
}

// Transcript implements TranscriptStore.
func (s *Postgres) Transcript(ctx context.Context, id string) ([]TranscriptEntry, error) {
	rs, err := s.pool.Query(ctx, `SELECT e.hash, b.data FROM transcript_entries e JOIN blobs b ON b.hash = e.hash
		WHERE e.transcript_id = $1 ORDER BY e.position`, id)
	if err == nil {
		defer rs.Close()
	}
	return transcriptOf(id, rs, err)
}
