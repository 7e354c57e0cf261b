package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/workspace"
)

// A workspace of 1,000 files of 2 KiB, the size of a mid-sized service.
const benchFiles, benchFileBytes = 1000, 2 << 10

// snapshotter is what the benchmarks time: a store or the plain-directory
// baseline.
type snapshotter interface {
	put(files []workspace.File) (string, error)
	get(id string) ([]workspace.File, error)
	storedBytes() (int64, error)
}

type storeSnapshotter struct{ s Store }

func (w storeSnapshotter) put(files []workspace.File) (string, error) {
	return w.s.PutSnapshot(context.Background(), files)
}

func (w storeSnapshotter) get(id string) ([]workspace.File, error) {
	return w.s.GetSnapshot(context.Background(), id)
}

func (w storeSnapshotter) storedBytes() (int64, error) {
	st, err := w.s.Stats(context.Background())
	return st.BlobBytes, err
}

// dirSnapshotter is the in-process baseline: every snapshot is a full copy
// written with os.WriteFile and read back with os.ReadFile.
type dirSnapshotter struct {
	root  string
	paths map[string][]string
	n     int
	bytes int64
}

func (d *dirSnapshotter) put(files []workspace.File) (string, error) {
	d.n++
	id := strconv.Itoa(d.n)
	paths := make([]string, len(files))
	for i, f := range files {
		name := filepath.Join(d.root, id, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(name, f.Data, os.FileMode(f.FileMode())); err != nil {
			return "", err
		}
		paths[i] = f.Path
		d.bytes += int64(len(f.Data))
	}
	d.paths[id] = paths
	return id, nil
}

func (d *dirSnapshotter) get(id string) ([]workspace.File, error) {
	files := make([]workspace.File, len(d.paths[id]))
	for i, p := range d.paths[id] {
		data, err := os.ReadFile(filepath.Join(d.root, id, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		files[i] = workspace.File{Path: p, Data: data}
	}
	return files, nil
}

func (d *dirSnapshotter) storedBytes() (int64, error) { return d.bytes, nil }

var benchTargets = []struct {
	name string
	open func(b *testing.B) snapshotter
}{
	{"dir", func(b *testing.B) snapshotter {
		return &dirSnapshotter{root: b.TempDir(), paths: map[string][]string{}}
	}},
	{"sqlite", func(b *testing.B) snapshotter { return storeSnapshotter{openTarget(b, sqliteTarget(b))} }},
	{"postgres", func(b *testing.B) snapshotter { return storeSnapshotter{openTarget(b, postgresTarget(b))} }},
}

// BenchmarkSnapshotWriteRead stores a fresh 1,000-file workspace and reads
// it back; every iteration has new content, so nothing dedups.
func BenchmarkSnapshotWriteRead(b *testing.B) {
	for _, tgt := range benchTargets {
		b.Run(tgt.name, func(b *testing.B) {
			s := tgt.open(b)
			b.SetBytes(benchFiles * benchFileBytes)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				files := genFiles(benchFiles, benchFileBytes, fmt.Sprintf("wr%d", i))
				b.StartTimer()
				id, err := s.put(files)
				if err != nil {
					b.Fatal(err)
				}
				got, err := s.get(id)
				if err != nil || len(got) != benchFiles {
					b.Fatalf("read back %d files: %v", len(got), err)
				}
			}
		})
	}
}

// BenchmarkSnapshotGrowth stores 10 snapshots of a workspace, each changing
// one file from the previous, and reports logical bytes over stored bytes.
func BenchmarkSnapshotGrowth(b *testing.B) {
	const iterations = 10
	for _, tgt := range benchTargets {
		b.Run(tgt.name, func(b *testing.B) {
			s := tgt.open(b)
			var logical int64
			before, err := s.storedBytes()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				files := genFiles(benchFiles, benchFileBytes, fmt.Sprintf("grow%d", i))
				b.StartTimer()
				for k := range iterations {
					files[k*97%benchFiles].Data = fmt.Appendf(nil, "edit %d of run %d\n", k, i)
					if _, err := s.put(files); err != nil {
						b.Fatal(err)
					}
					for _, f := range files {
						logical += int64(len(f.Data))
					}
				}
			}
			b.StopTimer()
			after, err := s.storedBytes()
			if err != nil {
				b.Fatal(err)
			}
			stored := after - before
			b.ReportMetric(float64(logical)/float64(stored), "dedup-ratio")
			b.ReportMetric(float64(stored)/float64(b.N), "stored-B/op")
		})
	}
}

// BenchmarkSnapshotEdit stores a run of one-file edits of a 1,000-file
// workspace, each over the one before, as a tool loop does, two ways in one
// run: the files whole (PutSnapshot hashes and writes every entry) and as
// the change over the previous snapshot (PutSnapshotDelta; every 17th is
// stored whole again, which the p50 and the mean both include). It prints
// each p50 and mean and their ratios:
//
//	go test -run '^$' -bench SnapshotEdit -benchtime 1x ./internal/store/
func BenchmarkSnapshotEdit(b *testing.B) {
	const edits = 4*(maxDepth+1) - 1 // the last one maxDepth layers deep
	ctx := context.Background()
	for _, tgt := range backends {
		b.Run(tgt.name, func(b *testing.B) {
			s := openTarget(b, tgt.target(b))
			files := normalised(genFiles(benchFiles, benchFileBytes, "edit"))
			prev := mustPut(b, s, files)
			var whole, delta []time.Duration
			for i := range edits {
				k := i * 97 % benchFiles
				// Whole and delta store different content, so neither finds
				// the other's snapshot already there.
				files[k].Data = fmt.Appendf(nil, "whole edit %d\n", i)
				start := time.Now()
				if _, err := s.PutSnapshot(ctx, files); err != nil {
					b.Fatal(err)
				}
				whole = append(whole, time.Since(start))
				change := []workspace.File{{Path: files[k].Path, Data: fmt.Appendf(nil, "delta edit %d\n", i)}}
				start = time.Now()
				var err error
				if prev, err = s.PutSnapshotDelta(ctx, prev, change, nil); err != nil {
					b.Fatal(err)
				}
				delta = append(delta, time.Since(start))
			}
			// Reading back: the last layered snapshot, deepest of all, and
			// the same files stored whole.
			layered := prev
			deepest, err := s.(entryReader).depth(ctx, layered)
			if err != nil {
				b.Fatal(err)
			}
			got, err := s.GetSnapshot(ctx, layered)
			if err != nil {
				b.Fatal(err)
			}
			for i := range got {
				got[i].Data = append(got[i].Data, '\n') // not yet stored
			}
			flat := mustPut(b, s, got)
			var readLayered, readFlat []time.Duration
			for range 20 {
				for _, r := range []struct {
					id   string
					took *[]time.Duration
				}{{layered, &readLayered}, {flat, &readFlat}} {
					start := time.Now()
					if _, err := s.GetSnapshot(ctx, r.id); err != nil {
						b.Fatal(err)
					}
					*r.took = append(*r.took, time.Since(start))
				}
			}
			rl, rf := median(readLayered), median(readFlat)
			fmt.Printf("%s: reading %d layers back %.2f ms, whole %.2f ms, ratio %.2f\n", tgt.name, deepest, ms(rl), ms(rf), float64(rl)/float64(rf))
			b.ReportMetric(float64(rl)/float64(rf), "read-layered/whole")

			w, d := median(whole), median(delta)
			wm, dm := mean(whole), mean(delta)
			fmt.Printf("%s: %d edits of %d files, p50 whole %.2f ms, delta %.2f ms, ratio %.2f; mean whole %.2f ms, delta %.2f ms, ratio %.2f\n",
				tgt.name, edits, benchFiles, ms(w), ms(d), float64(d)/float64(w), ms(wm), ms(dm), float64(dm)/float64(wm))
			b.ReportMetric(float64(d)/float64(w), "delta/whole-p50")
			b.ReportMetric(float64(dm)/float64(wm), "delta/whole-mean")
		})
	}
}

func mean(d []time.Duration) time.Duration {
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
