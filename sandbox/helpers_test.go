package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/moby/moby/client"
)

// shared runners, one per backend and pool setting, built once: warm pools
// take seconds to fill.
var (
	runnersMu sync.Mutex
	runners   = map[string]Runner{}
)

func testRunner(t testing.TB, backend string, poolSize int) Runner {
	t.Helper()
	key := backend + "/" + strconv.Itoa(poolSize)
	runnersMu.Lock()
	defer runnersMu.Unlock()
	if r, ok := runners[key]; ok {
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Every language of the registry is served; only python and go warm
	// up at start, the others on their first run.
	cfg := Config{Backend: backend, PoolSize: poolSize, Slots: 4, Profiles: testProfiles(), Warm: []string{"python", "go"}}
	if backend == bwrapNoSeccomp {
		cfg.Backend, cfg.noSeccomp = "bwrap", true
	}
	r, err := New(ctx, cfg)
	if err != nil {
		testenv.RequireService(t, backend+" backend", err)
	}
	runners[key] = r
	return r
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	code := m.Run()
	for _, r := range runners {
		r.Close()
	}
	testenv.Cleanup()
	os.Exit(code)
}

// bwrapNoSeccomp names, for testRunner, bwrap without its seccomp filter:
// the baseline of what the filter costs.
const bwrapNoSeccomp = "bwrap-noseccomp"

// backends are the backends every behaviour is checked on.
var backends = []string{"docker", "bwrap"}

func run(t testing.TB, r Runner, spec Spec) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := r.Run(ctx, spec)
	if err != nil {
		t.Fatalf("run %v: %v", spec.Cmd, err)
	}
	return res
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func files(kv ...string) []workspace.File {
	var fs []workspace.File
	for i := 0; i+1 < len(kv); i += 2 {
		fs = append(fs, workspace.File{Path: kv[i], Data: []byte(kv[i+1])})
	}
	return fs
}

// inner returns the backend behind the slot limit.
func inner(r Runner) backend {
	return r.(*slotted).backend
}

// assertClean checks that a run left nothing behind: no container of this
// process and no process descended from the test, beyond the idle warm
// sandboxes of the test's runners.
func assertClean(t *testing.T, r Runner) {
	t.Helper()
	for _, r := range allRunners() {
		waitWarm(t, r) // a refill under way is no leak
		if br, ok := inner(r).(*bwrapRunner); ok && br.goCache.Load() != nil {
			_ = br.goCache.Load().wait(context.Background()) // nor is the first build of the Go cache
		}
	}
	switch b := inner(r).(type) {
	case *dockerRunner:
		b.settle()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		list, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", labelOwner+"="+b.owner)})
		if err != nil {
			t.Fatalf("list containers: %v", err)
		}
		idle := 0
		for _, r := range allRunners() {
			if d, ok := inner(r).(*dockerRunner); ok {
				for _, pl := range d.allPools() {
					idle += len(pl.snapshot())
				}
			}
		}
		if len(list.Items) > idle {
			t.Errorf("%d sandbox containers left (%d idle in the pools)", len(list.Items), idle)
		}
	case *bwrapRunner:
		// A process that outlived its sandbox would be reparented to the
		// test (child subreaper is not set, so to init) or stay under it.
		warm := map[int]bool{}
		for _, r := range allRunners() {
			if br, ok := inner(r).(*bwrapRunner); ok {
				for _, pl := range br.pools {
					for _, p := range pl.snapshot() {
						warm[p.cmd.Process.Pid] = true
						for _, d := range descendants(p.cmd.Process.Pid) {
							warm[d] = true
						}
					}
				}
			}
		}
		var left []int
		for _, pid := range descendants(os.Getpid()) {
			if !warm[pid] {
				left = append(left, pid)
			}
		}
		if len(left) > 0 {
			t.Errorf("processes left under the test: %v", left)
		}
		if b.cgroups.limitsMemory() {
			if left := leftCgroups(b); len(left) > 0 {
				t.Errorf("cgroups left: %v", left)
			}
		}
	}
}

func allRunners() []Runner {
	runnersMu.Lock()
	defer runnersMu.Unlock()
	var rs []Runner
	for _, r := range runners {
		rs = append(rs, r)
	}
	return rs
}

// descendants lists the pids whose parent chain reaches root.
func descendants(root int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the ")" closing the command name: state ppid ...
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		f := strings.Fields(string(rest))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			parent[pid] = ppid
		}
	}
	var out []int
	for pid := range parent {
		for p, n := parent[pid], 0; p > 0 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// hostProcsWith lists host pids whose command line contains marker.
func hostProcsWith(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(marker)) {
			out = append(out, e.Name()+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}

// leftCgroups lists the cgroups of this process's runners that no idle
// warm sandbox holds. All runners of the process share one owner id.
func leftCgroups(b *bwrapRunner) []string {
	held := map[string]bool{}
	for _, r := range allRunners() {
		if br, ok := inner(r).(*bwrapRunner); ok {
			for _, pl := range br.pools {
				for _, p := range pl.snapshot() {
					for _, d := range p.cgroup.dirs {
						held[d] = true
					}
				}
			}
		}
	}
	var left []string
	for _, parent := range b.cgroups.parents {
		ents, _ := os.ReadDir(parent)
		for _, e := range ents {
			d := filepath.Join(parent, e.Name())
			if strings.HasPrefix(e.Name(), cgroupPrefix+b.cgroups.owner+":") && !strings.HasSuffix(e.Name(), ":worker") && !held[d] {
				left = append(left, d)
			}
		}
	}
	return left
}
