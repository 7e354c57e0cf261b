package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Record is a task's notification targets, kept in the store: a task's
// workflow carries only the record's key, which says nothing of the URLs,
// so no webhook URL enters its history.
type Record struct {
	Targets []Target `json:"targets"`
	// Link is the task's Web UI page, known to the command that starts it.
	Link string `json:"link,omitempty"`
}

// MemoStore is the part of the store a record is kept in.
type MemoStore interface {
	PutMemo(ctx context.Context, key string, value []byte) error
	GetMemo(ctx context.Context, key string) ([]byte, error)
}

// ErrBadRef is a key that is not a record's.
var ErrBadRef = errors.New("not a notification key")

// refPrefix starts every record's key in the store.
const refPrefix = "notify/"

// Save stores r under a new random key and returns the key. The key is
// random, not a hash of the record, so it tells nothing about the URLs.
func Save(ctx context.Context, st MemoStore, r Record) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make notification key: %w", err)
	}
	ref := refPrefix + hex.EncodeToString(b[:])
	data, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encode notification targets: %w", err)
	}
	if err := st.PutMemo(ctx, ref, data); err != nil {
		return "", fmt.Errorf("store notification targets: %w", err)
	}
	return ref, nil
}

// Load reads the record stored under ref.
func Load(ctx context.Context, st MemoStore, ref string) (Record, error) {
	if !strings.HasPrefix(ref, refPrefix) {
		return Record{}, fmt.Errorf("%q: %w", ref, ErrBadRef)
	}
	data, err := st.GetMemo(ctx, ref)
	if err != nil {
		return Record{}, fmt.Errorf("read notification targets: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("decode notification targets: %w", err)
	}
	return r, nil
}
