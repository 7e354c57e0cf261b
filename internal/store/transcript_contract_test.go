package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestTranscriptContract(t *testing.T) { forEachBackend(t, RunTranscriptContract) }

// RunTranscriptContract checks the transcript behaviour every Store must
// share. open returns two stores on one fresh, empty database, as two
// workers would hold.
func RunTranscriptContract(t *testing.T, open func(t *testing.T) (Store, Store)) {
	ctx := context.Background()
	entries := func(texts ...string) [][]byte {
		out := make([][]byte, len(texts))
		for i, s := range texts {
			out[i] = []byte(s)
		}
		return out
	}
	mustAppend := func(t *testing.T, s Store, id string, pos int, texts ...string) []string {
		t.Helper()
		hashes, err := s.AppendEntries(ctx, id, pos, entries(texts...))
		if err != nil {
			t.Fatalf("append %q at %d: %v", texts, pos, err)
		}
		return hashes
	}
	// assertTranscript checks the entries' content, order and hashes.
	assertTranscript := func(t *testing.T, s Store, id string, want ...string) {
		t.Helper()
		got, err := s.Transcript(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("transcript %s has %d entries, want %d: %q", id, len(got), len(want), got)
		}
		for i, e := range got {
			if string(e.Data) != want[i] || e.Hash != hashData([]byte(want[i])) {
				t.Errorf("entry %d = %q (%s), want %q", i, e.Data, e.Hash, want[i])
			}
		}
	}
	conflict := func(t *testing.T, err error, pos int) *TranscriptConflictError {
		t.Helper()
		var ce *TranscriptConflictError
		if !errors.Is(err, ErrTranscriptConflict) || !errors.As(err, &ce) {
			t.Fatalf("err = %v, want a transcript conflict", err)
		}
		if ce.Position != pos {
			t.Fatalf("conflict at %d, want %d: %v", ce.Position, pos, err)
		}
		return ce
	}

	t.Run("appends read back in order", func(t *testing.T) {
		s, _ := open(t)
		hashes := mustAppend(t, s, "t1", 0, `{"role":"system"}`, `{"role":"user"}`)
		if len(hashes) != 2 || hashes[0] != hashData([]byte(`{"role":"system"}`)) {
			t.Fatalf("hashes = %q", hashes)
		}
		mustAppend(t, s, "t1", 2, `{"role":"assistant"}`)
		mustAppend(t, s, "t1", 3, "", `{"role":"tool"}`) // an empty entry is an entry
		assertTranscript(t, s, "t1", `{"role":"system"}`, `{"role":"user"}`, `{"role":"assistant"}`, "", `{"role":"tool"}`)
	})

	t.Run("unknown transcript is empty", func(t *testing.T) {
		s, _ := open(t)
		got, err := s.Transcript(ctx, "never")
		if err != nil || got == nil || len(got) != 0 {
			t.Fatalf("Transcript = %v, %v; want an empty list", got, err)
		}
	})

	t.Run("a retried append changes nothing", func(t *testing.T) {
		s, other := open(t)
		mustAppend(t, s, "t", 0, "a", "b")
		mustAppend(t, s, "t", 0, "a", "b")
		mustAppend(t, other, "t", 1, "b") // another worker retrying the second half
		mustAppend(t, s, "t", 1, "b", "c")
		assertTranscript(t, s, "t", "a", "b", "c")
	})

	t.Run("a different entry at a taken position is a conflict, and nothing is added", func(t *testing.T) {
		s, _ := open(t)
		mustAppend(t, s, "t", 0, "a", "b")
		_, err := s.AppendEntries(ctx, "t", 1, entries("b", "c", "d"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.AppendEntries(ctx, "t", 2, entries("C", "e"))
		ce := conflict(t, err, 2)
		if ce.Have != hashData([]byte("c")) || ce.Want != hashData([]byte("C")) {
			t.Errorf("conflict = %+v", ce)
		}
		// Entries after the one in conflict are not kept either.
		_, err = s.AppendEntries(ctx, "t", 3, entries("D", "e", "f"))
		conflict(t, err, 3)
		assertTranscript(t, s, "t", "a", "b", "c", "d")
	})

	t.Run("a position past the end is a conflict", func(t *testing.T) {
		s, _ := open(t)
		_, err := s.AppendEntries(ctx, "t", 1, entries("a"))
		if ce := conflict(t, err, 1); ce.Length != 0 || ce.Have != "" {
			t.Errorf("conflict = %+v", ce)
		}
		mustAppend(t, s, "t", 0, "a")
		_, err = s.AppendEntries(ctx, "t", 2, entries("c"))
		conflict(t, err, 2)
		assertTranscript(t, s, "t", "a")
		if _, err := s.AppendEntries(ctx, "t", -1, entries("z")); err == nil {
			t.Fatal("a negative position was accepted")
		}
		if _, err := s.AppendEntries(ctx, "", 0, entries("z")); err == nil {
			t.Fatal("an empty id was accepted")
		}
	})

	t.Run("transcripts are separate and share content", func(t *testing.T) {
		s, _ := open(t)
		before, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, "one", 0, "system", "same")
		mustAppend(t, s, "two", 0, "system", "other", "same")
		assertTranscript(t, s, "one", "system", "same")
		assertTranscript(t, s, "two", "system", "other", "same")
		after, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := after.Blobs - before.Blobs; n != 3 {
			t.Errorf("%d blobs stored for 3 distinct entries", n)
		}
	})

	t.Run("racing writers of one position: one entry wins, the same entry is no conflict", func(t *testing.T) {
		s1, s2 := open(t)
		mustAppend(t, s1, "t", 0, "start")
		const writers = 8
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := s1
				if i%2 == 1 {
					s = s2
				}
				// Half retry the same entry; the rest each offer their own.
				text := "same"
				if i >= writers/2 {
					text = fmt.Sprintf("own %d", i)
				}
				_, errs[i] = s.AppendEntries(ctx, "t", 1, entries(text))
			}()
		}
		wg.Wait()
		got, err := s2.Transcript(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("transcript has %d entries after the race, want 2", len(got))
		}
		winner := string(got[1].Data)
		for i, err := range errs {
			text := "same"
			if i >= writers/2 {
				text = fmt.Sprintf("own %d", i)
			}
			switch {
			case text == winner && err != nil:
				t.Errorf("writer %d offered the stored entry and got %v", i, err)
			case text != winner && !errors.Is(err, ErrTranscriptConflict):
				t.Errorf("writer %d offered %q over %q and got %v, want a conflict", i, text, winner, err)
			}
		}
	})
}
