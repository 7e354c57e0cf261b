package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
)

func TestDeltaContract(t *testing.T) { forEachBackend(t, RunDeltaContract) }

// RunDeltaContract checks PutSnapshotDelta on every backend: a snapshot
// made from a base and a change is the snapshot PutSnapshot makes of the
// same files, whole, under the same id.
func RunDeltaContract(t *testing.T, open func(t *testing.T) (Store, Store)) {
	ctx := context.Background()
	one := func(t *testing.T) Store {
		s, _ := open(t)
		return s
	}

	t.Run("same id and files as whole", func(t *testing.T) {
		s := one(t)
		files := normalised(genFiles(40, 300, "delta"))
		base := mustPut(t, s, files)
		steps := []struct {
			name    string
			writes  []workspace.File
			deletes []string
		}{
			{"edit", []workspace.File{{Path: files[3].Path, Data: []byte("edited\n")}}, nil},
			{"add in a new dir", []workspace.File{{Path: "new/dir/a.go", Data: []byte("package dir\n")}}, nil},
			{"delete", nil, []string{files[7].Path, files[8].Path}},
			{"mode only", []workspace.File{{Path: files[9].Path, Mode: 0o755, Data: files[9].Data}}, nil},
			{"empty file", []workspace.File{{Path: "empty", Data: nil}}, nil},
			{"all at once", []workspace.File{{Path: files[0].Path, Data: []byte("x")}, {Path: "zz", Data: []byte("x")}}, []string{files[1].Path, "new/dir/a.go"}},
			{"nothing", nil, nil},
		}
		want := files
		for _, st := range steps {
			t.Run(st.name, func(t *testing.T) {
				before := mustStats(t, s)
				id, err := s.PutSnapshotDelta(ctx, base, st.writes, st.deletes)
				if err != nil {
					t.Fatal(err)
				}
				want = applyChange(want, st.writes, st.deletes)
				got, err := s.GetSnapshot(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				assertFiles(t, got, want)
				if whole := mustPlan(t, want).id; id != whole {
					t.Fatalf("delta id %s, whole id %s", id, whole)
				}
				if after := mustStats(t, s); len(st.writes)+len(st.deletes) == 0 && after != before {
					t.Fatalf("an empty change stored something: %+v, then %+v", before, after)
				}
				base = id
			})
		}
	})

	t.Run("stores only the new content", func(t *testing.T) {
		s := one(t)
		files := genFiles(30, 200, "blobs")
		base := mustPut(t, s, files)
		before := mustStats(t, s)
		id, err := s.PutSnapshotDelta(ctx, base, []workspace.File{
			{Path: "a", Data: []byte("new")}, {Path: "b", Data: []byte("new")}, {Path: "c", Data: files[0].Data},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := Stats{Blobs: before.Blobs + 1, BlobBytes: before.BlobBytes + 3, Snapshots: before.Snapshots + 1}
		if st := mustStats(t, s); st != want {
			t.Fatalf("stats %+v, want %+v", st, want)
		}
		// The same files put whole are the same snapshot: nothing more.
		all := append(normalised(files), workspace.File{Path: "a", Data: []byte("new")},
			workspace.File{Path: "b", Data: []byte("new")}, workspace.File{Path: "c", Data: files[0].Data})
		if again := mustPut(t, s, all); again != id {
			t.Fatalf("put whole: %s, delta gave %s", again, id)
		}
		if st := mustStats(t, s); st != want {
			t.Fatalf("putting the same files whole stored more: %+v, want %+v", st, want)
		}
	})

	t.Run("a chain of random changes", func(t *testing.T) {
		s := one(t)
		rng := rand.New(rand.NewPCG(1, 2))
		want := normalised(genFiles(60, 100, "chain"))
		base := mustPut(t, s, want)
		for round := range 40 {
			writes, deletes := randomChange(rng, want, round)
			id, err := s.PutSnapshotDelta(ctx, base, writes, deletes)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			want = applyChange(want, writes, deletes)
			if whole := mustPlan(t, want).id; id != whole {
				t.Fatalf("round %d: delta id %s, whole id %s", round, id, whole)
			}
			base = id
		}
		got, err := s.GetSnapshot(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		assertFiles(t, got, want)
	})

	t.Run("layers stay shallow", func(t *testing.T) {
		s := one(t)
		layers, ok := s.(entryReader)
		if !ok {
			t.Fatalf("%T does not say how deep a snapshot is", s)
		}
		want := normalised(genFiles(20, 50, "deep"))
		id := mustPut(t, s, want)
		for i := 1; i <= 2*maxDepth+2; i++ {
			writes := []workspace.File{{Path: fmt.Sprintf("f%02d", i), Data: fmt.Appendf(nil, "%d", i)}}
			var deletes []string
			if i%3 == 0 {
				deletes = []string{want[0].Path}
			}
			var err error
			if id, err = s.PutSnapshotDelta(ctx, id, writes, deletes); err != nil {
				t.Fatal(err)
			}
			want = applyChange(want, writes, deletes)
			depth, err := layers.depth(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if wantDepth := i % (maxDepth + 1); depth != wantDepth {
				t.Fatalf("change %d: depth %d, want %d", i, depth, wantDepth)
			}
			got, err := s.GetSnapshot(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			assertFiles(t, got, want)
		}
	})

	t.Run("refused", func(t *testing.T) {
		big := make([]byte, workspace.DefaultLimits.MaxFileBytes)
		s := one(t)
		files := genFiles(5, 10, "refuse")
		base := mustPut(t, s, files)
		tests := []struct {
			name    string
			writes  []workspace.File
			deletes []string
			want    error
			msg     string
		}{
			{"written and deleted", []workspace.File{{Path: "x"}}, []string{"x"}, ErrInvalidSnapshot, "both written and deleted"},
			{"written twice", []workspace.File{{Path: "x"}, {Path: "x"}}, nil, ErrInvalidSnapshot, "written twice"},
			{"deleted twice", nil, []string{files[0].Path, files[0].Path}, ErrInvalidSnapshot, "deleted twice"},
			{"deleting what is not there", nil, []string{"nope"}, ErrInvalidSnapshot, "not in snapshot"},
			{"unsafe path", []workspace.File{{Path: "../escape"}}, nil, workspace.ErrUnsafePath, ""},
			{"not canonical", []workspace.File{{Path: "a/./b"}}, nil, workspace.ErrUnsafePath, ""},
			{"version control", []workspace.File{{Path: ".git/config"}}, nil, workspace.ErrVCSMetadata, ""},
			{"bare repository", []workspace.File{{Path: "r/HEAD", Data: []byte("ref: refs/heads/main\n")}, {Path: "r/objects", Mode: 0o755}, {Path: "r/refs/heads/main"}}, nil, workspace.ErrVCSMetadata, ""},
			{"file too large", []workspace.File{{Path: "big", Data: append(big, 'x')}}, nil, workspace.ErrTooLarge, ""},
			{"too many bytes", sharing(big, 65), nil, workspace.ErrTooLarge, ""},
			{"too many files", under("many/", genFiles(workspace.DefaultLimits.MaxFiles, 1, "many")), nil, workspace.ErrTooLarge, ""},
		}
		before := mustStats(t, s)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := s.PutSnapshotDelta(ctx, base, tt.writes, tt.deletes)
				if !errors.Is(err, ErrInvalidSnapshot) || !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.msg) {
					t.Fatalf("err = %v, want ErrInvalidSnapshot and %v saying %q", err, tt.want, tt.msg)
				}
			})
		}
		if _, err := s.PutSnapshotDelta(ctx, strings.Repeat("0", 64), nil, nil); !errors.Is(err, ErrNotFound) {
			t.Fatalf("unknown base: err = %v, want ErrNotFound", err)
		}
		if st := mustStats(t, s); st != before {
			t.Fatalf("refused changes stored something: %+v, then %+v", before, st)
		}
	})

	t.Run("concurrent writers of one change", func(t *testing.T) {
		a, b := open(t)
		files := genFiles(50, 100, "race")
		base := mustPut(t, a, files)
		writes := []workspace.File{{Path: "new", Data: []byte("same change")}}
		ids := make([]string, 8)
		errs := make([]error, len(ids))
		var wg sync.WaitGroup
		for i := range ids {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() { ids[i], errs[i] = s.PutSnapshotDelta(ctx, base, writes, []string{files[i].Path}) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("writer %d: %v", i, err)
			}
			got, err := b.GetSnapshot(ctx, ids[i])
			if err != nil {
				t.Fatal(err)
			}
			assertFiles(t, got, applyChange(normalised(files), writes, []string{files[i].Path}))
		}
	})
}

// applyChange returns files (normalised, in path order) with writes put in
// and deletes taken out.
func applyChange(files, writes []workspace.File, deletes []string) []workspace.File {
	byPath := map[string]workspace.File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	for _, d := range deletes {
		delete(byPath, d)
	}
	for _, f := range writes {
		byPath[f.Path] = f
	}
	out := make([]workspace.File, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	return normalised(out)
}

// under moves files into dir.
func under(dir string, files []workspace.File) []workspace.File {
	for i := range files {
		files[i].Path = dir + files[i].Path
	}
	return files
}

// randomChange picks a few edits, additions, deletions and mode changes of
// files.
func randomChange(rng *rand.Rand, files []workspace.File, round int) ([]workspace.File, []string) {
	var writes []workspace.File
	var deletes []string
	used := map[string]bool{}
	for range 1 + rng.IntN(4) {
		f := files[rng.IntN(len(files))]
		if used[f.Path] {
			continue
		}
		used[f.Path] = true
		switch rng.IntN(4) {
		case 0:
			writes = append(writes, workspace.File{Path: f.Path, Mode: f.Mode, Data: fmt.Appendf(nil, "round %d\n", round)})
		case 1:
			writes = append(writes, workspace.File{Path: f.Path, Mode: f.Mode ^ 0o111, Data: f.Data})
		case 2:
			if len(files)-len(deletes) > 1 {
				deletes = append(deletes, f.Path)
			}
		default:
			p := fmt.Sprintf("added/r%d/%s", round, f.Path)
			writes = append(writes, workspace.File{Path: p, Data: f.Data})
		}
	}
	return writes, deletes
}
