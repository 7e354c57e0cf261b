package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// trivialSpec is the smallest real test run of a profile; "noop" runs
// `true` in the python sandbox, which measures a backend's own floor.
func trivialSpec(profile string) Spec {
	switch profile {
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
		for _, tc := range b.tools {
			if tc.begun.Load() {
				full = append(full, func() bool { return isClosed(tc.done) })
			}
		}
		for _, pl := range b.pools {
			if pl.warming() {
				full = append(full, pl.full)
			}
		}
	case *bwrapRunner:
		for _, pl := range b.pools {
			if pl.warming() {
				full = append(full, pl.full)
			}
		}
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
	p, _ := LookupProfile(spec.Profile)
	home := filepath.Join(dir, ".home")
	env := append(p.environ(hostGoRoot()+"/bin:"+hostPath), "HOME="+home, "TMPDIR="+home, "GOTMPDIR="+home,
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
}

func pct(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkOverhead compares a trivial pytest and go test run bare, in
// bwrap and in docker, each cold (a sandbox started for the run) and warm
// (taken from the pool); the noop rows run `true`, the floor of each path:
//
//	go test ./sandbox -run '^$' -bench Overhead -benchtime 10x
func BenchmarkOverhead(b *testing.B) {
	var rows []benchRow
	for _, profile := range []string{"noop", "python", "go"} {
		spec := trivialSpec(profile)
		modes := []struct {
			name   string
			runner func(b *testing.B) Runner
		}{
			{"bare", nil},
			{"bwrap-cold", func(b *testing.B) Runner { return testRunner(b, "bwrap", -1) }},
			{"bwrap-warm", func(b *testing.B) Runner { return testRunner(b, "bwrap", 2) }},
			{"docker-cold", func(b *testing.B) Runner { return testRunner(b, "docker", -1) }},
			{"docker-warm", func(b *testing.B) Runner { return testRunner(b, "docker", 2) }},
		}
		for _, m := range modes {
			b.Run(profile+"/"+m.name, func(b *testing.B) {
				var samples []time.Duration
				var r Runner
				seed := ""
				if m.runner != nil {
					r = m.runner(b)
				} else if profile == "go" {
					c := inner(testRunner(b, "bwrap", -1)).(*bwrapRunner).startGoCache()
					if err := c.wait(context.Background()); err != nil {
						b.Fatal(err)
					}
					seed = c.dir
				}
				for range b.N {
					if r == nil {
						samples = append(samples, bare(b, spec, seed))
						continue
					}
					waitWarm(b, r)
					start := time.Now()
					res := run(b, r, spec)
					samples = append(samples, time.Since(start))
					if res.ExitCode != 0 {
						b.Fatalf("%+v", res)
					}
				}
				row := benchRow{profile + "/" + m.name, pct(samples, 0.5), pct(samples, 0.95)}
				b.ReportMetric(float64(row.p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(row.p95.Microseconds())/1000, "p95-ms")
				b.ReportMetric(0, "ns/op")
				if i := slices.IndexFunc(rows, func(x benchRow) bool { return x.name == row.name }); i >= 0 {
					rows[i] = row
				} else {
					rows = append(rows, row)
				}
			})
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-20s %9s %9s %8s %10s\n", "mode", "p50", "p95", "x bare", "+ms p50")
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
		fmt.Fprintf(&sb, "%-20s %9v %9v %7.2fx %+10.0f\n", r.name, r.p50.Round(time.Millisecond), r.p95.Round(time.Millisecond), ratio, float64(over.Milliseconds()))
	}
	b.Log(sb.String())
	fmt.Print(sb.String())
}
