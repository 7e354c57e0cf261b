package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/autocoder/autocoder/internal/testenv"
)

// TestWarmUpsWaitForUse checks, on both backends, that a runner warms up no
// language before it is used: right after New no pool fills and nothing of
// go (sandbox, container, toolchain volumes, Go cache) starts; a python run
// then runs without any go warm-up under way, after it the python pool
// fills while go stays cold, and the first go run warms go up.
func TestWarmUpsWaitForUse(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			// bwrap: no Go cache built yet. Not under t.TempDir, which the
			// sandbox user cannot enter.
			cache, err := os.MkdirTemp("", "autocoder-warmup-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(cache) })
			r, err := New(ctx, Config{Backend: be, PoolSize: 2, Slots: 2, CacheDir: cache, Profiles: testProfiles("python", "go")})
			if err != nil {
				testenv.RequireService(t, be+" backend", err)
			}
			t.Cleanup(func() {
				if br, ok := inner(r).(*bwrapRunner); ok && br.goCache.Load() != nil {
					_ = br.goCache.Load().wait(context.Background()) // before its dir goes
				}
				r.Close()
			})
			pool := func(profile string) interface {
				warming() bool
				full() bool
			} {
				switch b := inner(r).(type) {
				case *dockerRunner:
					p := mustProfile(t, profile)
					return b.pools[newPoolKey(p, p.Image, b.limits)]
				case *bwrapRunner:
					return b.pools[bwrapKey{profile, b.limits}]
				}
				return nil
			}
			// goWork lists what of go has started, in the backend's own terms.
			goWork := func() []string {
				var got []string
				if pool("go").warming() {
					got = append(got, "go pool filling")
				}
				switch b := inner(r).(type) {
				case *dockerRunner:
					l, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
						Filters: make(client.Filters).Add("label", labelRunner+"="+b.id).Add("label", labelProfile+"=go")})
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range l.Items {
						got = append(got, "container "+strings.Join(c.Names, ","))
					}
				case *bwrapRunner:
					if b.goCache.Load() != nil {
						got = append(got, "go cache started")
					}
					built, _ := filepath.Glob(filepath.Join(cache, "gocache-*"))
					for _, d := range built {
						got = append(got, "go cache dir "+filepath.Base(d))
					}
				}
				return got
			}
			if pool("python").warming() {
				t.Error("python pool fills before any python run")
			}
			if w := goWork(); len(w) > 0 {
				t.Fatalf("go warm-up started at New: %v", w)
			}
			res := run(t, r, trivialSpec("python"))
			if res.ExitCode != 0 {
				t.Fatalf("python run: %+v", res)
			}
			if w := goWork(); len(w) > 0 {
				t.Fatalf("go warm-up started by a python run: %v", w)
			}
			waitFull(t, "python", pool("python"))
			if w := goWork(); len(w) > 0 {
				t.Fatalf("go warm-up started while the python pool filled: %v", w)
			}

			res = run(t, r, trivialSpec("go"))
			if res.ExitCode != 0 {
				t.Fatalf("go run: %+v", res)
			}
			waitFull(t, "go", pool("go"))
			if br, ok := inner(r).(*bwrapRunner); ok {
				if _, err := os.Stat(br.goCache.Load().dir); err != nil {
					t.Fatalf("no Go cache after a go run: %v", err)
				}
			}
		})
	}
}

func waitFull(t *testing.T, what string, pl interface{ full() bool }) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !pl.full() {
		if time.Now().After(deadline) {
			t.Fatalf("%s pool did not fill", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkFirstRun measures a python run right after New on a fresh
// runner (on bwrap, with no Go cache built yet), with every language
// warmed at start and with warm-ups on first use, in the same run:
//
//	go test ./sandbox -run '^$' -bench FirstRun -benchtime 3x
func BenchmarkFirstRun(b *testing.B) {
	rows := map[string]string{} // the last of b.Run's calls counts
	var names []string
	for _, be := range backends {
		base := time.Duration(0)
		for _, mode := range []struct {
			name string
			warm []string
		}{{"lazy", nil}, {"eager", []string{"python", "go"}}} {
			b.Run(be+"/"+mode.name, func(b *testing.B) {
				var samples []time.Duration
				for range b.N {
					samples = append(samples, firstRun(b, be, mode.warm))
				}
				p50 := pct(samples, 0.5)
				if mode.warm == nil {
					base = p50
				}
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
				b.ReportMetric(0, "ns/op")
				name := be + "/" + mode.name
				if _, ok := rows[name]; !ok {
					names = append(names, name)
				}
				rows[name] = fmt.Sprintf("%-14s p50 %7v  %5.2fx lazy", name, p50.Round(time.Millisecond), float64(p50)/float64(base))
			})
		}
	}
	fmt.Println()
	for _, n := range names {
		fmt.Println(rows[n])
	}
}

func firstRun(b *testing.B, be string, warm []string) time.Duration {
	cache, err := os.MkdirTemp("", "autocoder-firstrun-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(cache)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := New(ctx, Config{Backend: be, PoolSize: 2, Slots: 2, CacheDir: cache, Profiles: testProfiles("python", "go"), Warm: warm})
	if err != nil {
		testenv.RequireService(b, be+" backend", err)
	}
	start := time.Now()
	res := run(b, r, trivialSpec("python"))
	took := time.Since(start)
	if res.ExitCode != 0 {
		b.Fatalf("%+v", res)
	}
	waitWarm(b, r)
	if br, ok := inner(r).(*bwrapRunner); ok && br.goCache.Load() != nil {
		_ = br.goCache.Load().wait(ctx)
	}
	r.Close()
	return took
}
