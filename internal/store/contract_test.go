package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

// TestStoreID wants each store its own ID, the same after a reopen.
func TestStoreID(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			first, err := Open(ctx, targetConfig(target))
			if err != nil {
				t.Fatal(err)
			}
			id, err := first.ID(ctx)
			if err != nil || len(id) != 32 {
				t.Fatalf("ID = %q, %v; want 32 hex digits", id, err)
			}
			if err := first.Close(); err != nil {
				t.Fatal(err)
			}
			if again, err := openTarget(t, target).ID(ctx); err != nil || again != id {
				t.Errorf("reopened: ID = %q, %v; want %q", again, err, id)
			}
			if other, err := openTarget(t, b.target(t)).ID(ctx); err != nil || other == id {
				t.Errorf("another store: ID = %q, %v; want one of its own", other, err)
			}
		})
	}
}

func TestContract(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			RunContract(t, func(t *testing.T) Store { return openTarget(t, b.target(t)) })
		})
	}
}

// RunContract checks the behaviour every Store must share. open returns a
// fresh, empty store for each subtest.
func RunContract(t *testing.T, open func(t *testing.T) Store) {
	ctx := context.Background()

	t.Run("roundtrip", func(t *testing.T) {
		s := open(t)
		in := []workspace.File{
			{Path: "main.go", Data: []byte("package main\n")},
			{Path: "a/deep/dir/x.bin", Mode: 0o600, Data: []byte{0, 1, 2, 255}},
			{Path: "empty", Data: nil},
			{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
		}
		id, err := s.PutSnapshot(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 64 {
			t.Fatalf("id %q is not a hex sha256", id)
		}
		got, err := s.GetSnapshot(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := normalised(in)
		assertFiles(t, got, want)

		m, err := s.GetManifest(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != id || len(m.Entries) != len(want) {
			t.Fatalf("manifest %s has %d entries, want %s with %d", m.ID, len(m.Entries), id, len(want))
		}
		for i, e := range m.Entries {
			w := want[i]
			if e.Path != w.Path || e.Mode != w.Mode || e.Size != int64(len(w.Data)) || e.Hash != hashData(w.Data) {
				t.Errorf("entry %d = %+v, want %s mode %o size %d", i, e, w.Path, w.Mode, len(w.Data))
			}
			data, err := s.GetBlob(ctx, e.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, w.Data) {
				t.Errorf("blob %s = %q, want %q", e.Hash, data, w.Data)
			}
		}
	})

	t.Run("idempotent ids", func(t *testing.T) {
		s := open(t)
		files := genFiles(20, 100, "idem")
		id1 := mustPut(t, s, files)
		reversed := make([]workspace.File, len(files))
		for i, f := range files {
			reversed[len(files)-1-i] = f
		}
		if id2 := mustPut(t, s, reversed); id2 != id1 {
			t.Fatalf("same files in another order: id %s, want %s", id2, id1)
		}
		explicit := normalised(files) // Mode 0 and 0o644 are the same file
		if id3 := mustPut(t, s, explicit); id3 != id1 {
			t.Fatalf("explicit default mode: id %s, want %s", id3, id1)
		}
		changed := normalised(files)
		changed[3].Mode = 0o755
		if id4 := mustPut(t, s, changed); id4 == id1 {
			t.Fatal("a mode change kept the id")
		}
		renamed := normalised(files)
		renamed[0].Path = "zz/renamed.go"
		if id5 := mustPut(t, s, renamed); id5 == id1 {
			t.Fatal("a rename kept the id")
		}
		if st := mustStats(t, s); st.Snapshots != 3 || st.Blobs != 20 {
			t.Fatalf("stats %+v, want 3 snapshots over 20 blobs", st)
		}
	})

	t.Run("dedup across snapshots", func(t *testing.T) {
		s := open(t)
		base := genFiles(10, 500, "dedup")
		base = append(base, workspace.File{Path: "copy.go", Data: base[0].Data}) // same content twice
		mustPut(t, s, base)
		next := normalised(base)
		next[5].Data = []byte("changed")
		mustPut(t, s, next)
		want := Stats{Blobs: 11, BlobBytes: 10*500 + int64(len("changed")), Snapshots: 2}
		if st := mustStats(t, s); st != want {
			t.Fatalf("stats %+v, want %+v", st, want)
		}
	})

	t.Run("limits", func(t *testing.T) {
		big := make([]byte, workspace.DefaultLimits.MaxFileBytes)
		tests := []struct {
			name  string
			files []workspace.File
			msg   string
		}{
			{"too many files", genFiles(workspace.DefaultLimits.MaxFiles+1, 1, "many"), "more than the limit"},
			{"file too large", []workspace.File{{Path: "big", Data: append(big, 'x')}}, "more than the limit"},
			{"too many bytes", sharing(big, 65), "more than the limit"},
			{"duplicate path", []workspace.File{{Path: "a"}, {Path: "a"}}, "duplicate path"},
		}
		s := open(t)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := s.PutSnapshot(ctx, tt.files)
				if !errors.Is(err, ErrInvalidSnapshot) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err = %v, want ErrInvalidSnapshot saying %q", err, tt.msg)
				}
			})
		}
		if st := mustStats(t, s); st != (Stats{}) {
			t.Fatalf("rejected snapshots left %+v", st)
		}
	})

	t.Run("unsafe paths", func(t *testing.T) {
		s := open(t)
		for _, p := range []string{"", "/etc/passwd", "../up", "a/../../b", "a\\b", "nul\x00byte", "./a", "a//b", "a/", ".", ".git/config", "lib/.GIT/hooks/pre-commit", ".hg/hgrc"} {
			_, err := s.PutSnapshot(ctx, []workspace.File{{Path: "ok.go"}, {Path: p, Data: []byte("x")}})
			if !errors.Is(err, workspace.ErrUnsafePath) || !errors.Is(err, ErrInvalidSnapshot) {
				t.Errorf("path %q: err = %v, want ErrUnsafePath and ErrInvalidSnapshot", p, err)
			}
		}
		if st := mustStats(t, s); st != (Stats{}) {
			t.Fatalf("rejected snapshots left %+v", st)
		}
	})

	t.Run("not found", func(t *testing.T) {
		s := open(t)
		unknown := strings.Repeat("0", 64)
		_, err1 := s.GetSnapshot(ctx, unknown)
		_, err2 := s.GetManifest(ctx, unknown)
		_, err3 := s.GetBlob(ctx, unknown)
		_, err4 := s.GetMemo(ctx, "absent")
		for i, err := range []error{err1, err2, err3, err4} {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("lookup %d: err = %v, want ErrNotFound", i, err)
			}
		}
	})

	t.Run("memo", func(t *testing.T) {
		s := open(t)
		steps := []struct {
			key   string
			value []byte
		}{
			{"plan/abc", []byte(`{"steps":1}`)},
			{"plan/def", []byte{}},
			{"plan/abc", []byte(`{"steps":2}`)}, // overwrite
		}
		want := map[string][]byte{}
		for _, st := range steps {
			if err := s.PutMemo(ctx, st.key, st.value); err != nil {
				t.Fatal(err)
			}
			want[st.key] = st.value
			for k, v := range want {
				got, err := s.GetMemo(ctx, k)
				if err != nil || !bytes.Equal(got, v) {
					t.Fatalf("GetMemo(%q) = %q, %v; want %q", k, got, err, v)
				}
			}
		}
	})

	t.Run("concurrent writers", func(t *testing.T) {
		s := open(t)
		const writers = 8
		same := genFiles(200, 300, "same")
		shared := genFiles(50, 300, "shared")
		sameID := mustPlan(t, same).id

		var wg sync.WaitGroup
		errs := make(chan error, 3*writers)
		stop := make(chan struct{})
		// A reader polls while the writers run: the snapshot is absent
		// or whole, never partial.
		var readers sync.WaitGroup
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.GetSnapshot(ctx, sameID)
				if err != nil && !errors.Is(err, ErrNotFound) {
					errs <- err
					return
				}
				if err == nil && len(got) != len(same) {
					errs <- fmt.Errorf("saw %d of %d files", len(got), len(same))
					return
				}
			}
		})
		for i := range writers {
			wg.Go(func() {
				if id, err := s.PutSnapshot(ctx, same); err != nil || id != sameID {
					errs <- fmt.Errorf("same content: id %s, err %v", id, err)
				}
			})
			wg.Go(func() {
				files := append(normalised(shared), workspace.File{Path: "own.go", Data: fmt.Appendf(nil, "writer %d", i)})
				if _, err := s.PutSnapshot(ctx, files); err != nil {
					errs <- fmt.Errorf("different content: %w", err)
				}
			})
		}
		wg.Wait()
		close(stop)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		want := Stats{Blobs: 200 + 50 + writers, Snapshots: 1 + writers}
		if st := mustStats(t, s); st.Blobs != want.Blobs || st.Snapshots != want.Snapshots {
			t.Fatalf("stats %+v, want %d blobs and %d snapshots", st, want.Blobs, want.Snapshots)
		}
		got, err := s.GetSnapshot(ctx, sameID)
		if err != nil {
			t.Fatal(err)
		}
		assertFiles(t, got, normalised(same))
	})

	t.Run("empty snapshot", func(t *testing.T) {
		s := open(t)
		id := mustPut(t, s, nil)
		if id != hashData(nil) {
			t.Fatalf("empty snapshot id %s, want sha256 of nothing", id)
		}
		got, err := s.GetSnapshot(ctx, id)
		if err != nil || len(got) != 0 {
			t.Fatalf("GetSnapshot = %d files, %v; want none", len(got), err)
		}
		m, err := s.GetManifest(ctx, id)
		if err != nil || len(m.Entries) != 0 {
			t.Fatalf("GetManifest = %d entries, %v; want none", len(m.Entries), err)
		}
	})

	t.Run("modes", func(t *testing.T) {
		s := open(t)
		tests := []struct {
			mode, want uint32
		}{{0, 0o644}, {0o644, 0o644}, {0o755, 0o755}, {0o600, 0o600}, {0o444, 0o444}, {0o4755, 0o755}}
		var files []workspace.File
		for i, tt := range tests {
			files = append(files, workspace.File{Path: fmt.Sprintf("f%d", i), Mode: tt.mode, Data: []byte("x")})
		}
		got, err := s.GetSnapshot(ctx, mustPut(t, s, files))
		if err != nil {
			t.Fatal(err)
		}
		for i, tt := range tests {
			if got[i].Mode != tt.want {
				t.Errorf("mode %o came back as %o, want %o", tt.mode, got[i].Mode, tt.want)
			}
		}
	})
}

// normalised returns a sorted copy of files with the modes the store keeps.
func normalised(files []workspace.File) []workspace.File {
	out := make([]workspace.File, len(files))
	for i, f := range files {
		out[i] = workspace.File{Path: f.Path, Mode: f.FileMode(), Data: nonNil(f.Data)}
	}
	workspace.Sort(out)
	return out
}

// sharing returns n files holding the same data.
func sharing(data []byte, n int) []workspace.File {
	files := make([]workspace.File, n)
	for i := range files {
		files[i] = workspace.File{Path: fmt.Sprintf("f%03d", i), Data: data}
	}
	return files
}

func assertFiles(t *testing.T, got, want []workspace.File) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d files, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Path != want[i].Path || got[i].Mode != want[i].Mode || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("file %d = %s mode %o (%d bytes), want %s mode %o (%d bytes)",
				i, got[i].Path, got[i].Mode, len(got[i].Data), want[i].Path, want[i].Mode, len(want[i].Data))
		}
	}
}

func mustPut(t testing.TB, s Store, files []workspace.File) string {
	t.Helper()
	id, err := s.PutSnapshot(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustPlan(t testing.TB, files []workspace.File) plan {
	t.Helper()
	p, err := planSnapshot(files)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustStats(t testing.TB, s Store) Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
