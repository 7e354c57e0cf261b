package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/workspace"
)

const secretValue = "sk-test-4f1c2b9e-must-not-leak"

// adversary is one hostile program and what containing it looks like.
type adversary struct {
	name  string
	spec  func(t *testing.T) Spec
	check func(t *testing.T, backend string, res Result)
	// marker, if set, names processes that must not survive the run.
	marker string
}

// forkBomb is a Python program that forks until the process limit stops
// it, each child sleeping for marker seconds (the marker finds them among
// the host's processes), and then runs tail; n is the number of children.
func forkBomb(marker, tail string) string {
	return `
import os, time
n = 0
for i in range(5000):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(` + marker + `)
        os._exit(0)
    n += 1
` + tail + "\n"
}

func adversaries(t *testing.T) []adversary {
	repo, _ := os.Getwd()
	return []adversary{
		{
			name: "fork bomb",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Limits: Limits{Pids: 64, Timeout: 60 * time.Second}, Cmd: []string{"python3", "-c", forkBomb("7311", `print("forked", n)`)}}
			},
			check: func(t *testing.T, _ string, res Result) {
				m := regexp.MustCompile(`forked (\d+)`).FindStringSubmatch(res.Stdout)
				if m == nil {
					t.Fatalf("no count: %+v", res)
				}
				if n, _ := strconv.Atoi(m[1]); n >= 64 || n < 1 {
					t.Fatalf("forked %d processes with a limit of 64", n)
				}
			},
			marker: "7311",
		},
		{
			name: "memory bomb",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Limits: Limits{MemoryBytes: 256 << 20}, Cmd: []string{"python3", "-c",
					"x = bytearray(b'x') * (1 << 30)\nprint('allocated', len(x))"}}
			},
			// Both backends: killed by the kernel for its cgroup's limit.
			check: func(t *testing.T, _ string, res Result) {
				if res.ExitCode != 137 || !res.OOMKilled || strings.Contains(res.Stdout, "allocated") {
					t.Fatalf("want an OOM kill: %+v", res)
				}
			},
		},
		{
			name: "cpu spin past the timeout",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Limits: Limits{Timeout: 2 * time.Second}, Cmd: []string{"python3", "-c", "while True: pass"}}
			},
			check: func(t *testing.T, _ string, res Result) {
				if !res.TimedOut || res.Duration > 10*time.Second || res.ExitCode == 0 {
					t.Fatalf("want a timeout near 2s: %+v", res)
				}
			},
		},
		{
			name: "orphans after the timeout",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Limits: Limits{Timeout: 2 * time.Second},
					Cmd: sh(`sleep 7312 & setsid sleep 7312 & (sleep 7312 &) ; python3 -c 'while True: pass'`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				if !res.TimedOut {
					t.Fatalf("want timeout: %+v", res)
				}
			},
			marker: "7312",
		},
		{
			name: "orphans after a normal exit",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Cmd: sh(`setsid sleep 7313 & (sleep 7313 &); echo left`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				if res.ExitCode != 0 || res.Stdout != "left\n" {
					t.Fatalf("%+v", res)
				}
			},
			marker: "7313",
		},
		{
			name: "disk fill",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Limits: Limits{WorkdirBytes: 16 << 20, TmpBytes: 16 << 20}, Cmd: sh(`
for p in /work/big /tmp/big /dev/shm/big; do
  head -c 100000000 /dev/zero > $p 2>/dev/null && echo "FILLED $p"
  echo "$p $(wc -c < $p 2>/dev/null || echo 0)"
done`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				if strings.Contains(res.Stdout, "FILLED") {
					t.Fatalf("a 100 MB write succeeded: %q", res.Stdout)
				}
				for _, line := range strings.Split(strings.TrimSpace(res.Stdout), "\n") {
					f := strings.Fields(line)
					if n, _ := strconv.ParseInt(f[len(f)-1], 10, 64); n > 64<<20 {
						t.Fatalf("wrote %d bytes: %q", n, line)
					}
				}
			},
		},
		{
			name: "network",
			spec: func(t *testing.T) Spec {
				port, addrs := hostListener(t)
				return Spec{Profile: "python", Cmd: []string{"python3", "-c", fmt.Sprintf(`
import socket
for host in %q.split():
    try:
        socket.create_connection((host, %d), timeout=2).close()
        print("CONNECTED", host)
    except OSError as e:
        print("refused", host, e)
try:
    print("RESOLVED", socket.getaddrinfo("example.com", 80))
except OSError as e:
    print("dns failed", e)
`, strings.Join(addrs, " "), port)}}
			},
			check: func(t *testing.T, _ string, res Result) {
				if strings.Contains(res.Stdout, "CONNECTED") || strings.Contains(res.Stdout, "RESOLVED") || !strings.Contains(res.Stdout, "dns failed") {
					t.Fatalf("network reachable: %q %q", res.Stdout, res.Stderr)
				}
			},
		},
		{
			name: "host files",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Cmd: sh(fmt.Sprintf(`
for p in /etc/shadow /root %[1]s %[1]s/go.mod /home /var/run/docker.sock /proc/1/root/etc/shadow; do
  if [ -d "$p" ] && [ -n "$(ls -A "$p" 2>/dev/null)" ]; then echo "LISTED $p"; fi
  if [ -f "$p" ] && cat "$p" >/dev/null 2>&1; then echo "READ $p"; fi
  if [ -S "$p" ]; then echo "SOCKET $p"; fi
done
echo done`, repo))}
			},
			check: func(t *testing.T, _ string, res Result) {
				if res.Stdout != "done\n" {
					t.Fatalf("host files visible: %q", res.Stdout)
				}
			},
		},
		{
			name: "writes outside the workspace",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Cmd: sh(`
for p in /x /usr/x /etc/x /etc/passwd /bin/x /var/x /opt/x /proc/sys/kernel/hostname; do
  if (echo hi > "$p") 2>/dev/null; then echo "WROTE $p"; fi
done
echo done`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				if res.Stdout != "done\n" {
					t.Fatalf("wrote outside: %q", res.Stdout)
				}
			},
		},
		{
			name: "privilege",
			spec: func(*testing.T) Spec {
				return Spec{Profile: "python", Cmd: sh(`
mkdir -p /tmp/m
mount -t tmpfs none /tmp/m 2>/dev/null && echo MOUNTED
python3 -c 'import os; os.setuid(0); print("ROOT")' 2>/dev/null
grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status
id -u`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "NoNewPrivs:\t1", "65534"} {
					if !strings.Contains(res.Stdout, want) {
						t.Errorf("missing %q in %q", want, res.Stdout)
					}
				}
				if strings.Contains(res.Stdout, "MOUNTED") || strings.Contains(res.Stdout, "ROOT") {
					t.Fatalf("privileged operation worked: %q", res.Stdout)
				}
			},
		},
		outputFlood("python", 1<<30),
	}
}

func TestAdversarial(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, -1)
			for _, adv := range adversaries(t) {
				t.Run(adv.name, func(t *testing.T) {
					res := run(t, r, adv.spec(t))
					adv.check(t, be, res)
					if adv.marker != "" {
						if left := hostProcsWith("sleep " + adv.marker); len(left) > 0 {
							t.Errorf("processes survived the run: %v", left)
						}
					}
					next := run(t, r, Spec{Profile: "python", Cmd: []string{"python3", "-c", "print('alive')"}})
					if next.ExitCode != 0 || next.Stdout != "alive\n" {
						t.Fatalf("next run: %+v", next)
					}
					assertClean(t, r)
				})
			}
			t.Run("path traversal", func(t *testing.T) {
				before := descendants(os.Getpid())
				_, err := r.Run(context.Background(), Spec{Profile: "python", Files: []workspace.File{
					{Path: "ok.py", Data: []byte("x")}, {Path: "../../etc/evil", Data: []byte("x")}}})
				if !errors.Is(err, workspace.ErrUnsafePath) || !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("err = %v", err)
				}
				if after := descendants(os.Getpid()); len(after) > len(before) {
					t.Fatalf("a sandbox was started: %v", after)
				}
				assertClean(t, r)
			})
		})
	}
}

func TestConcurrencySlots(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			const n, slots = 20, 4
			type span struct{ start, end int64 }
			spans := make([]span, n)
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := r.Run(context.Background(), Spec{Profile: "python",
						Cmd: sh(fmt.Sprintf(`date +%%s%%N; sleep 0.4; echo run-%d; date +%%s%%N`, i))})
					if err != nil {
						errs <- err
						return
					}
					f := strings.Fields(res.Stdout)
					if res.ExitCode != 0 || len(f) != 3 || f[1] != fmt.Sprintf("run-%d", i) {
						errs <- fmt.Errorf("run %d: %+v", i, res)
						return
					}
					s, _ := strconv.ParseInt(f[0], 10, 64)
					e, _ := strconv.ParseInt(f[2], 10, 64)
					spans[i] = span{s, e}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if t.Failed() {
				return
			}
			// Sweep the start/end events for the highest overlap.
			type ev struct {
				at    int64
				delta int
			}
			var evs []ev
			for _, s := range spans {
				evs = append(evs, ev{s.start, 1}, ev{s.end, -1})
			}
			sort.Slice(evs, func(i, j int) bool {
				if evs[i].at != evs[j].at {
					return evs[i].at < evs[j].at
				}
				return evs[i].delta < evs[j].delta
			})
			cur, peak := 0, 0
			for _, e := range evs {
				cur += e.delta
				peak = max(peak, cur)
			}
			t.Logf("peak concurrent runs: %d (slots %d)", peak, slots)
			if peak > slots || peak < 2 {
				t.Fatalf("peak concurrency %d, want 2..%d", peak, slots)
			}
		})
	}
}
