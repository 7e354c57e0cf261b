package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/moby/moby/client"
)

// unavailable fails in CI and skips elsewhere: the suite needs the real
// docker daemon, images and bwrap.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI: %s", msg)
	}
	t.Skip(msg)
}

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
	r, err := New(ctx, Config{Backend: backend, PoolSize: poolSize, Slots: 4})
	if err != nil {
		unavailable(t, "%s backend: %v", backend, err)
	}
	runners[key] = r
	return r
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, r := range runners {
		r.Close()
	}
	os.Exit(code)
}

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
	if s, ok := r.(*slotted); ok {
		return s.backend
	}
	return r
}

// assertClean checks that a run left nothing behind: no container of this
// process (pool disabled) and no process descended from the test.
func assertClean(t *testing.T, r Runner) {
	t.Helper()
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
		for _, pl := range b.pools {
			idle += len(pl.ready)
		}
		if len(list.Items) > idle {
			t.Errorf("%d sandbox containers left (%d idle in the pool)", len(list.Items), idle)
		}
	case *bwrapRunner:
		// A process that outlived its sandbox would be reparented to the
		// test (child subreaper is not set, so to init) or stay under it.
		if d := descendants(os.Getpid()); len(d) > 0 {
			t.Errorf("processes left under the test: %v", d)
		}
	}
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
