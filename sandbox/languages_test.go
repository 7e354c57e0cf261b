package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
)

// TestAdversarialLanguages runs the hostile programs no language is needed
// for in every language's sandbox, on both backends: in the language's
// own image on docker, with its own host toolchain paths and environment on
// bwrap. They are POSIX shell and what every Debian image has (coreutils,
// bash, perl-base), so each image is checked for what it adds to the
// sandbox, not for its toolchain. The languages run in parallel, each in
// sandboxes of its own, with small limits; the whole backend must be clean
// once they are all over.
func TestAdversarialLanguages(t *testing.T) {
	setCanary(t)
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, -1)
			t.Run("languages", func(t *testing.T) {
				for i, p := range testProfiles() {
					t.Run(p.Name, func(t *testing.T) {
						t.Parallel()
						requireProfile(t, r, p.Name)
						for _, adv := range languageAdversaries(p.Name, strconv.Itoa(7320+i)) {
							t.Run(adv.name, func(t *testing.T) {
								adv.check(t, be, run(t, r, adv.spec(t)))
								if left := hostProcsWith(adv.marker); adv.marker != "" && len(left) > 0 {
									t.Errorf("processes survived the run: %v", left)
								}
							})
						}
						if next := run(t, r, Spec{Profile: p.Name, Cmd: sh("echo alive")}); next.ExitCode != 0 || next.Stdout != "alive\n" {
							t.Fatalf("next run: %+v", next)
						}
					})
				}
			})
			assertClean(t, r)
		})
	}
}

// requireProfile skips (fails, in CI) a language whose image or host
// toolchain is missing: a sandbox of it cannot start.
func requireProfile(t *testing.T, r Runner, profile string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := r.Run(ctx, Spec{Profile: profile, Cmd: []string{"true"}})
	if errors.Is(err, ErrImageMissing) || errors.Is(err, ErrUnavailable) {
		testenv.RequireService(t, fmt.Sprintf("the %s sandbox on %s", profile, r.Name()), err)
	}
	if err != nil {
		t.Fatalf("%s sandbox: %v", profile, err)
	}
}

// canaryName is a variable of the worker's environment that no sandbox
// may see; setCanary sets it, with secretValue, for the test.
const canaryName = "AUTOCODER_TEST_SECRET"

// setCanary puts secrets into this process's environment, as a worker's
// holds its API keys. Not t.Setenv, which parallel subtests forbid.
func setCanary(t *testing.T) {
	for _, k := range []string{canaryName, "OPENAI_API_KEY"} {
		old, had := os.LookupEnv(k)
		if err := os.Setenv(k, secretValue); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		})
	}
}

// memoryHog buffers 700 MB: tail must hold a line whole to print it, and
// /dev/zero has no newline.
const memoryHog = `head -c 734003200 /dev/zero | tail -n 1`

// languageAdversaries are the hostile programs of one profile; marker is
// a number of its own that names its processes among the host's.
func languageAdversaries(profile, marker string) []adversary {
	return []adversary{
		{
			name: "fork bomb",
			// Children until fork fails, which ends dash; each child is
			// a sleep the marker finds.
			spec: func(*testing.T) Spec {
				return Spec{Profile: profile, Limits: Limits{Pids: 64, Timeout: time.Minute}, Cmd: sh(
					`i=0; while [ $i -lt 5000 ]; do sleep ` + marker + ` & i=$((i+1)); echo "forked $i"; done`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				counts := regexp.MustCompile(`forked (\d+)\n`).FindAllStringSubmatch(res.Stdout, -1)
				if len(counts) == 0 {
					t.Fatalf("no count: %+v", res)
				}
				n, _ := strconv.Atoi(counts[len(counts)-1][1])
				if n >= 64 {
					t.Fatalf("forked %d processes with a limit of 64", n)
				}
				t.Logf("forked %d with a limit of 64", n)
			},
			marker: "sleep " + marker,
		},
		{
			name: "fork bomb that keeps forking",
			// The classic bomb: every process starts two more, in the
			// background, and those that cannot fork exit, making room.
			// The comment puts the marker in each one's command line.
			spec: func(*testing.T) Spec {
				return Spec{Profile: profile, Limits: Limits{Pids: 64, Timeout: 10 * time.Second}, Cmd: sh(
					`# bomb ` + marker + "\nf(){ f|f& }; f; sleep 2; echo survived")}
			},
			check: func(t *testing.T, _ string, res Result) {
				if res.Duration > 15*time.Second {
					t.Fatalf("ran %v with a timeout of 10s: %+v", res.Duration, res)
				}
				t.Logf("exit %d after %v (timed out: %v): %q", res.ExitCode, res.Duration.Round(time.Millisecond), res.TimedOut, clipBytes([]byte(res.Stdout+res.Stderr), 200))
			},
			marker: "bomb " + marker,
		},
		{
			name: "memory",
			spec: func(*testing.T) Spec {
				return Spec{Profile: profile, Limits: Limits{MemoryBytes: 256 << 20}, Cmd: sh(memoryHog)}
			},
			// Both backends: killed by the kernel for its cgroup's limit,
			// before tail could print its line.
			check: func(t *testing.T, _ string, res Result) {
				if res.ExitCode != 137 || !res.OOMKilled || res.Stdout != "" {
					t.Fatalf("want an OOM kill: exit %d oom %v stdout %d bytes, stderr %q", res.ExitCode, res.OOMKilled, len(res.Stdout), res.Stderr)
				}
			},
		},
		{
			name: "cpu spin past the timeout",
			spec: func(*testing.T) Spec {
				return Spec{Profile: profile, Limits: Limits{Timeout: 2 * time.Second}, Cmd: sh(`while :; do :; done`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				if !res.TimedOut || res.Duration > 10*time.Second || res.ExitCode == 0 {
					t.Fatalf("want a timeout near 2s: %+v", res)
				}
			},
		},
		{
			name: "network",
			spec: func(t *testing.T) Spec {
				port, addrs := hostListener(t)
				return Spec{Profile: profile, Cmd: []string{"sh", "-c", connectScript, "connect", strconv.Itoa(port), strings.Join(addrs, " ")}}
			},
			check: checkNoNetwork,
		},
		{
			name: "worker environment",
			spec: func(t *testing.T) Spec {
				return Spec{Profile: profile, Cmd: sh(`env; for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null | tr '\0' '\n'; done`)}
			},
			check: func(t *testing.T, _ string, res Result) {
				if strings.Contains(res.Stdout+res.Stderr, secretValue) || strings.Contains(res.Stdout, canaryName) || strings.Contains(res.Stdout, "OPENAI_API_KEY") {
					t.Fatalf("secret visible: %q", res.Stdout)
				}
				if !strings.Contains(res.Stdout, "HOME=/tmp") {
					t.Fatalf("env not set: %q", res.Stdout)
				}
			},
		},
		outputFlood(profile, floodBytes),
	}
}

// floodBytes is how much output each language's sandbox writes, 256
// times the limit: enough to show the cap holds without the run slowing
// down or this process holding it. The python sandbox also writes 1 GB
// (TestAdversarial); on docker that takes some 20 s a run, which every
// language would add to the suite.
const floodBytes = 256 << 20

// outputFlood writes n bytes to stdout, then a line to stderr, under a
// 1 MiB cap on each stream: the output is cut at the cap, the run goes on
// to its end, and this process's heap stays small.
func outputFlood(profile string, n int64) adversary {
	return adversary{
		name: fmt.Sprintf("%d MB of stdout", n>>20),
		spec: func(t *testing.T) Spec {
			watchHeap(t, 256<<20)
			return Spec{Profile: profile, Limits: Limits{OutputBytes: 1 << 20, Timeout: 2 * time.Minute},
				Cmd: sh(fmt.Sprintf(`head -c %d /dev/zero; echo tail >&2`, n))}
		},
		check: func(t *testing.T, _ string, res Result) {
			if !res.StdoutTruncated || len(res.Stdout) != 1<<20 || res.TimedOut || res.ExitCode != 0 || res.Stderr != "tail\n" {
				t.Fatalf("truncated=%v len=%d timedout=%v exit=%d stderr=%q", res.StdoutTruncated, len(res.Stdout), res.TimedOut, res.ExitCode, res.Stderr)
			}
			t.Logf("%d MB drained in %v", n>>20, res.Duration)
		},
	}
}

// connectScript tries a TCP connection to each of the host's addresses ($2)
// on a port the host listens on ($1), with every tool of the sandbox that
// can make one: bash's /dev/tcp and perl in every Debian image, the
// runtimes of the images that have them. A listener on the sandbox's own
// loopback is the control: each tool must reach it, so that failing to
// reach the host is the network's doing and not the tool's.
const connectScript = `port=$1 hosts=$2
try() {
	case $1 in
	bash) timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$2" "$3" ;;
	perl) timeout 5 perl -MIO::Socket::INET -e 'IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => $ARGV[1], Proto => "tcp", Timeout => 3) or die "$!\n"' "$2" "$3" ;;
	python3) timeout 5 python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()' "$2" "$3" ;;
	node) timeout 5 node -e 'require("net").connect(+process.argv[2], process.argv[1], () => process.exit(0)).on("error", e => { console.error(e.message); process.exit(1) })' "$2" "$3" ;;
	esac
}
ready=/tmp/.listening
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ARGV[0], Listen => 16, ReuseAddr => 1) or die "listen: $!\n"; open(my $f, ">", $ARGV[1]); close $f; while ($c = $s->accept) { close $c }' 7399 $ready &
listener=$!
i=0; while [ ! -e $ready ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
[ -e $ready ] && echo listening
for tool in bash perl python3 node; do
	command -v $tool >/dev/null 2>&1 || continue
	echo "tool $tool"
	try $tool 127.0.0.1 7399 && echo "control $tool"
	for host in $hosts; do
		if try $tool $host $port; then echo "CONNECTED $tool $host"; else echo "failed $tool $host"; fi
	done
done
kill $listener
getent hosts example.com && echo RESOLVED
echo done`

// checkNoNetwork reads connectScript's output: each tool reached the
// sandbox's own listener and none the host, and no name resolved.
func checkNoNetwork(t *testing.T, _ string, res Result) {
	out := res.Stdout
	if !strings.HasSuffix(out, "done\n") || !strings.Contains(out, "listening\n") {
		t.Fatalf("the script did not run through: %q %q", out, res.Stderr)
	}
	if strings.Contains(out, "CONNECTED") || strings.Contains(out, "RESOLVED") {
		t.Fatalf("network reachable: %q", out)
	}
	tools := regexp.MustCompile(`(?m)^tool (\S+)$`).FindAllStringSubmatch(out, -1)
	if len(tools) == 0 {
		t.Fatalf("no tool could try a connection: %q", out)
	}
	var tried []string
	for _, m := range tools {
		if !strings.Contains(out, "control "+m[1]+"\n") {
			t.Errorf("%s did not reach the sandbox's own listener, so its failures prove nothing: %q %q", m[1], out, res.Stderr)
		}
		tried = append(tried, m[1])
	}
	t.Logf("tried with %s", strings.Join(tried, ", "))
}

// hostListener listens on every host address and fails the test, at its
// end, if a connection came; it returns the port and the IPv4 addresses a
// sandbox might reach the host by.
func hostListener(t *testing.T) (port int, addrs []string) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		if n := accepted.Load(); n > 0 {
			t.Errorf("the host listener accepted %d connections from the sandbox", n)
		}
	})
	addrs = []string{"127.0.0.1"}
	ifaddrs, _ := net.InterfaceAddrs()
	for _, a := range ifaddrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			addrs = append(addrs, ipn.IP.String())
		}
	}
	return ln.Addr().(*net.TCPAddr).Port, addrs
}

// watchHeap fails the test if this process's heap in use passes limit
// while it runs: output the sandbox drops must not be held first.
func watchHeap(t *testing.T, limit uint64) {
	var maxHeap atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > maxHeap.Load() {
				maxHeap.Store(ms.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		wg.Wait()
		if h := maxHeap.Load(); h > limit {
			t.Errorf("heap in use reached %d MB", h>>20)
		}
		t.Logf("max heap in use: %d MB", maxHeap.Load()>>20)
	})
}
