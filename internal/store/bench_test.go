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

// BenchmarkSnapshotEdit stores one edit of a file in a 1,000-file
// workspace, as a tool call does, two ways in one run: the files whole
// (PutSnapshot hashes and writes every entry) and as the change over its
// base (PutSnapshotDelta). It prints each p50 and the ratio:
//
//	go test -run '^$' -bench SnapshotEdit -benchtime 1x ./internal/store/
func BenchmarkSnapshotEdit(b *testing.B) {
	const edits = 50
	ctx := context.Background()
	for _, tgt := range backends {
		b.Run(tgt.name, func(b *testing.B) {
			s := openTarget(b, tgt.target(b))
			files := normalised(genFiles(benchFiles, benchFileBytes, "edit"))
			base := mustPut(b, s, files)
			var whole, delta []time.Duration
			for i := range edits {
				k := i * 97 % benchFiles
				edited := make([]workspace.File, len(files))
				copy(edited, files)
				// Whole and delta store different content, so neither finds
				// the other's snapshot already there.
				edited[k].Data = fmt.Appendf(nil, "whole edit %d\n", i)
				start := time.Now()
				if _, err := s.PutSnapshot(ctx, edited); err != nil {
					b.Fatal(err)
				}
				whole = append(whole, time.Since(start))
				change := []workspace.File{{Path: files[k].Path, Data: fmt.Appendf(nil, "delta edit %d\n", i)}}
				start = time.Now()
				if _, err := s.PutSnapshotDelta(ctx, base, change, nil); err != nil {
					b.Fatal(err)
				}
				delta = append(delta, time.Since(start))
			}
			w, d := median(whole), median(delta)
			fmt.Printf("%s: one edit of %d files: whole %.2f ms, delta %.2f ms, ratio %.2f\n", tgt.name, benchFiles, ms(w), ms(d), float64(d)/float64(w))
			b.ReportMetric(ms(w), "whole-p50-ms")
			b.ReportMetric(ms(d), "delta-p50-ms")
			b.ReportMetric(float64(d)/float64(w), "delta/whole")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
