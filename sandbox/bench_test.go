package sandbox

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// trivialSpec is the smallest real test run of a profile; "noop" runs
// `true` in the python sandbox, which measures a backend's own floor, and
// "syscalls" makes 300,000 cheap system calls, the worst case of what a
// seccomp filter adds to each.
func trivialSpec(profile string) Spec {
	switch profile {
	case "syscalls":
		return Spec{Profile: "python", Cmd: []string{"python3", "-c", "import os\nfor _ in range(300000): os.getppid()"}}
	case "go":
		return Spec{Profile: "go", Files: files("go.mod", goMod, "m_test.go", goPass), Cmd: []string{"go", "test", "-count=1", "./..."}}
	case "noop":
		return Spec{Profile: "python", Cmd: []string{"true"}}
	}
	return Spec{Profile: "python", Files: files("test_a.py", pyPass)}
}

// waitWarm blocks until every warm-up of a runner that has begun is over:
// its pools full and its toolchain volumes filled, so that a sample
// measures a warm run and not a refill.
func waitWarm(tb testing.TB, r Runner) {
	var full []func() bool
	switch b := inner(r).(type) {
	case *dockerRunner:
		b.toolsMu.Lock()
		for _, tc := range b.tools {
			if tc.begun.Load() {
				full = append(full, func() bool { return isClosed(tc.done) })
			}
		}
		b.toolsMu.Unlock()
		full = append(full, filling(b.allPools())...)
	case *bwrapRunner:
		full = append(full, filling(append(slices.Collect(maps.Values(b.pools)), b.deps.all()...))...)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, f := range full {
		for !f() {
			if time.Now().After(deadline) {
				tb.Fatal("warm pool did not fill")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// filling is a test of each warming pool's being done: full, or retired
// (a pool whose install went away fills no more).
func filling[T any](pools []*warmPool[T]) []func() bool {
	var done []func() bool
	for _, pl := range pools {
		if pl.warming() {
			done = append(done, func() bool { return pl.full() || !pl.warming() })
		}
	}
	return done
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// bare runs the spec as a plain host subprocess with the same environment:
// the baseline the sandboxes are compared with.
func bare(tb testing.TB, spec Spec, seed string) time.Duration {
	dir := tb.TempDir()
	for _, f := range spec.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Path), f.Data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	p := mustProfile(tb, spec.Profile)
	home := filepath.Join(dir, ".home")
	env := append(p.environ(p.hostPATH()), "HOME="+home, "TMPDIR="+home, "GOTMPDIR="+home,
		"GOPATH="+home, "GOMODCACHE="+home+"/mod", "GOCACHE="+home+"/gocache")
	if err := os.MkdirAll(home, 0o755); err != nil {
		tb.Fatal(err)
	}
	if seed != "" {
		if out, err := exec.Command("cp", "-rs", seed, home+"/gocache").CombinedOutput(); err != nil {
			tb.Fatalf("seed cache: %v %s", err, out)
		}
	}
	argv := spec.Cmd
	if len(argv) == 0 {
		argv = p.TestCmd
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if argv[0] == "python3" {
		cmd.Path = "/usr/bin/python3"
	}
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("bare: %v %s", err, out)
	}
	return time.Since(start)
}

type benchRow struct {
	name     string
	p50, p95 time.Duration
	// paired is the median, over the iterations, of the ratio of the
	// row's run to the run made right before or after it: in
	// BenchmarkOverhead, a bwrap run's to one without the seccomp filter;
	// in BenchmarkLanguages, a sandbox run's to a bare one. Both see the
	// same load, which a shared host changes from one second to the next.
	paired float64
}

func pct[T cmp.Ordered](xs []T, q float64) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkOverhead compares a trivial pytest and go test run bare, in
// bwrap and in docker, each cold (a sandbox started for the run) and warm
// (taken from the pool); the noop rows run `true`, the floor of each path,
// and the syscalls rows a loop of system calls.
// Each bwrap run alternates with one in a sandbox without the seccomp
// filter (the -noseccomp rows), so the two see the same load; the seccomp
// column is the filter's cost, the median of those pairs' ratios:
//
//	go test ./sandbox -run '^$' -bench Overhead -benchtime 10x
func BenchmarkOverhead(b *testing.B) {
	var rows benchRows
	record := rows.record
	pooled := func(backend string, poolSize int) func(b *testing.B) Runner {
		return func(b *testing.B) Runner { return testRunner(b, backend, poolSize) }
	}
	for _, profile := range []string{"noop", "syscalls", "python", "go"} {
		spec := trivialSpec(profile)
		modes := []struct {
			name   string
			runner func(b *testing.B) Runner
			// unfiltered is the same sandbox without the seccomp filter.
			unfiltered func(b *testing.B) Runner
		}{
			{"bare", nil, nil},
			{"bwrap-cold", pooled("bwrap", -1), pooled(bwrapNoSeccomp, -1)},
			{"bwrap-warm", pooled("bwrap", 2), pooled(bwrapNoSeccomp, 2)},
			{"docker-cold", pooled("docker", -1), nil},
			{"docker-warm", pooled("docker", 2), nil},
		}
		for _, m := range modes {
			b.Run(profile+"/"+m.name, func(b *testing.B) {
				if m.runner == nil {
					seed := ""
					if profile == "go" {
						c := inner(testRunner(b, "bwrap", -1)).(*bwrapRunner).startGoCache(mustProfile(b, "go"))
						if err := c.wait(context.Background()); err != nil {
							b.Fatal(err)
						}
						seed = c.dir
					}
					var samples []time.Duration
					for range b.N {
						samples = append(samples, bare(b, spec, seed))
					}
					record(report(b, profile+"/"+m.name, samples))
					return
				}
				runners := []Runner{m.runner(b)}
				if m.unfiltered != nil {
					runners = append(runners, m.unfiltered(b))
				}
				samples := make([][]time.Duration, len(runners))
				for i := range b.N {
					for k := range runners {
						k = (k + i) % len(runners) // each goes first in turn
						for _, r := range runners {
							waitWarm(b, r) // the other's refill would compete for the CPU
						}
						start := time.Now()
						res := run(b, runners[k], spec)
						samples[k] = append(samples[k], time.Since(start))
						if res.ExitCode != 0 {
							b.Fatalf("%+v", res)
						}
					}
				}
				row := report(b, profile+"/"+m.name, samples[0])
				if m.unfiltered != nil {
					ratios := make([]float64, b.N)
					for i := range ratios {
						ratios[i] = float64(samples[0][i]) / float64(samples[1][i])
					}
					row.paired = pct(ratios, 0.5)
					b.ReportMetric(row.paired, "x-seccomp")
					record(row)
					record(benchRow{name: row.name + "-noseccomp", p50: pct(samples[1], 0.5), p95: pct(samples[1], 0.95)})
					return
				}
				record(row)
			})
		}
	}
	rows.print(b, "seccomp")
}

// report gives a mode's p50 and p95 as the benchmark's metrics.
func report(b *testing.B, name string, samples []time.Duration) benchRow {
	row := benchRow{name: name, p50: pct(samples, 0.5), p95: pct(samples, 0.95)}
	b.ReportMetric(float64(row.p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(row.p95.Microseconds())/1000, "p95-ms")
	b.ReportMetric(0, "ns/op")
	return row
}

// benchRows are a benchmark's rows in the order first recorded. Each
// sub-benchmark runs more than once (b.N = 1 first), so a row recorded
// again replaces the earlier one.
type benchRows []benchRow

func (rows *benchRows) record(row benchRow) {
	if i := slices.IndexFunc(*rows, func(x benchRow) bool { return x.name == row.name }); i >= 0 {
		(*rows)[i] = row
	} else {
		*rows = append(*rows, row)
	}
}

// print shows the rows as one table, each with its ratio to the bare row
// of its group ("python/bare" for "python/bwrap-warm"), and the paired
// ratios in a last column named paired.
func (rows benchRows) print(b *testing.B, paired string) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-29s %9s %9s %8s %10s %8s\n", "mode", "p50", "p95", "x bare", "+ms p50", paired)
	base := map[string]time.Duration{}
	for _, r := range rows {
		prof, mode, _ := strings.Cut(r.name, "/")
		if mode == "bare" {
			base[prof] = r.p50
		}
		ratio, over := 0.0, time.Duration(0)
		if bp := base[prof]; bp > 0 {
			ratio, over = float64(r.p50)/float64(bp), r.p50-bp
		}
		sec := ""
		if r.paired > 0 {
			sec = fmt.Sprintf("%.3fx", r.paired)
		}
		fmt.Fprintf(&sb, "%-29s %9v %9v %7.2fx %+10.0f %8s\n", r.name, r.p50.Round(time.Millisecond), r.p95.Round(time.Millisecond), ratio, float64(over.Milliseconds()), sec)
	}
	b.Log(sb.String())
	fmt.Print(sb.String())
}
