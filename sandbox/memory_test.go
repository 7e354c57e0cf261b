package sandbox

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
)

// goHold is a Go test that holds 400 MB, touched, as a solver's tables
// would: well under the 1 GiB limit in use, while the Go runtime reserves
// far more address space than that.
const goHold = `package hold

import "testing"

var held [][]byte

func TestHold(t *testing.T) {
	for i := 0; i < 400; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = byte(i)
		}
		held = append(held, b)
	}
	t.Logf("holding %d MB", len(held))
}
`

// javaHold is a small JVM program run from source: javac compiles it in the
// same JVM, which then holds 200 MB.
const javaHold = `public class Hold {
    public static void main(String[] args) {
        byte[][] held = new byte[200][];
        for (int i = 0; i < held.length; i++) {
            held[i] = new byte[1 << 20];
            held[i][i] = 1;
        }
        System.out.println("java held " + held.length + " MB");
    }
}
`

// nodeHold is a node program that holds 200 MB.
const nodeHold = `const held = [];
for (let i = 0; i < 200; i++) held.push(Buffer.alloc(1 << 20, i));
console.log("node held", held.length, "MB");`

// TestMemoryLimitRealRuntimes checks that the default 1 GiB limit bounds
// what a run uses, not what it reserves: a Go test holding 400 MB passes on
// both backends, and the JVM and node start and run on bwrap (which uses
// the host's; the images carry neither). Under RLIMIT_AS, bwrap's old
// limit, each of these died.
func TestMemoryLimitRealRuntimes(t *testing.T) {
	cases := []runtimeCase{
		{name: "go test holding 400 MB", want: "holding 400 MB", spec: Spec{Profile: "go",
			Files: files("go.mod", "module example.com/hold\n\ngo 1.21\n", "hold_test.go", goHold),
			Cmd:   []string{"go", "test", "-count=1", "-v", "./..."}}},
		{name: "java -version", want: "version", hostTool: "java", spec: Spec{Profile: "python", Cmd: sh("java -version 2>&1")}},
		{name: "jvm program", want: "java held 200 MB", hostTool: "javac", spec: Spec{Profile: "python",
			Files: files("Hold.java", javaHold), Cmd: []string{"java", "Hold.java"}}},
		{name: "node program", want: "node held 200 MB", hostTool: "node", spec: Spec{Profile: "python", Cmd: []string{"node", "-e", nodeHold}}},
	}
	runRuntimeCases(t, cases, func(t *testing.T, r Runner, tc runtimeCase, res Result) {
		if res.ExitCode != 0 || res.OOMKilled || res.TimedOut || !strings.Contains(res.Stdout, tc.want) {
			t.Fatalf("want exit 0 and %q: %+v", tc.want, res)
		}
		assertClean(t, r)
	})
}

// runtimeCase is a run that must succeed, saying want on stdout. One with
// a hostTool runs on bwrap only, which uses the host's toolchains (the
// images carry neither the JVM nor node).
type runtimeCase struct {
	name, want string
	spec       Spec
	hostTool   string
}

// runRuntimeCases runs each case on each backend (a host tool missing is a
// failure in CI) and hands its result to check.
func runRuntimeCases(t *testing.T, cases []runtimeCase, check func(t *testing.T, r Runner, tc runtimeCase, res Result)) {
	t.Helper()
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, -1)
			for _, tc := range cases {
				if tc.hostTool != "" && be != "bwrap" {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					if tc.hostTool != "" {
						if _, err := exec.LookPath(tc.hostTool); err != nil {
							testenv.RequireService(t, tc.hostTool+" on the host", err)
						}
					}
					check(t, r, tc, run(t, r, tc.spec))
				})
			}
		})
	}
}

// TestMemoryLimitOOMKill checks that a program that uses more than its
// limit is killed and reported as OOMKilled, with the same result on both
// backends, and that a run after it works.
func TestMemoryLimitOOMKill(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
	}{
		{"python", Spec{Profile: "python", Limits: Limits{MemoryBytes: 256 << 20}, Cmd: []string{"python3", "-c",
			"x = bytearray(b'x') * (1 << 30)\nprint('allocated', len(x))"}}},
		{"child of a shell", Spec{Profile: "python", Limits: Limits{MemoryBytes: 128 << 20}, Cmd: sh(
			`python3 -c "x = [bytearray(1 << 20) for _ in range(512)]; print('allocated')"; echo "status $?"`)}},
	}
	type outcome struct {
		exit      int
		oomKilled bool
		stdout    string
	}
	got := map[string]map[string]outcome{}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, -1)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					res := run(t, r, tc.spec)
					if !res.OOMKilled || res.TimedOut || strings.Contains(res.Stdout, "allocated") {
						t.Fatalf("want OOMKilled: %+v", res)
					}
					if got[tc.name] == nil {
						got[tc.name] = map[string]outcome{}
					}
					got[tc.name][be] = outcome{res.ExitCode, res.OOMKilled, res.Stdout}
					next := run(t, r, Spec{Profile: "python", Cmd: []string{"python3", "-c", "print('alive')"}})
					if next.ExitCode != 0 || next.Stdout != "alive\n" || next.OOMKilled {
						t.Fatalf("next run: %+v", next)
					}
					assertClean(t, r)
				})
			}
		})
	}
	for name, by := range got {
		if len(by) == len(backends) && by["docker"] != by["bwrap"] {
			t.Errorf("%s: docker and bwrap differ: %+v", name, by)
		}
	}
}

// TestCgroupsPerSandbox checks, on a root worker (as CI runs), that bwrap
// finds cgroups, gives each warm sandbox one of its own, and removes them
// with the sandboxes; and that a new runner reaps those of a dead worker.
func TestCgroupsPerSandbox(t *testing.T) {
	r := testRunner(t, "bwrap", 2)
	br := inner(r).(*bwrapRunner)
	if !br.cgroups.limitsMemory() {
		testenv.RequireService(t, "cgroups for bwrap", errors.New("none usable (see the runner's log)"))
	}
	waitWarm(t, r)
	seen := map[string]bool{}
	for _, pl := range br.pools {
		for _, p := range pl.snapshot() {
			if p.cgroup == nil {
				t.Fatal("a warm sandbox has no cgroup")
			}
			for _, pid := range append(descendants(p.cmd.Process.Pid), p.cmd.Process.Pid) {
				procs, err := os.ReadFile(filepath.Join(p.cgroup.dirs[0], "cgroup.procs"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains("\n"+string(procs), "\n"+strconv.Itoa(pid)+"\n") {
					t.Errorf("pid %d of a warm sandbox is not in its cgroup %s", pid, p.cgroup.dirs[0])
				}
			}
			if seen[p.cgroup.dirs[0]] {
				t.Errorf("two warm sandboxes share %s", p.cgroup.dirs[0])
			}
			seen[p.cgroup.dirs[0]] = true
		}
	}
	if len(seen) == 0 {
		t.Fatal("no warm sandboxes")
	}

	// A cgroup named for a process that is gone, with a process in it.
	dead := "deadhost"
	if h, err := os.Hostname(); err == nil {
		dead = h
	}
	stale := &cgroups{mode: br.cgroups.mode, parents: br.cgroups.parents, owner: dead + ":999999999:1"}
	g, err := stale.newCgroup(DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	sleeper := exec.Command("sleep", "7314")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill() })
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	if err := g.add(sleeper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	detectCgroups(br.log)
	for _, d := range g.dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the stale cgroup %s was not reaped: %v", d, err)
		}
	}
	select {
	case err := <-waited:
		if err == nil {
			t.Error("the process in the stale cgroup exited by itself")
		}
	case <-time.After(10 * time.Second):
		t.Error("the process in the stale cgroup was not killed")
	}
	for _, d := range br.cgroups.parents {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("parent cgroup gone: %v", err)
		}
	}
}

// TestCgroupsFallback checks that without any cgroup to use, bwrap falls
// back to RLIMIT_AS and the worker log says what that costs.
func TestCgroupsFallback(t *testing.T) {
	root := cgroupRoot
	cgroupRoot = t.TempDir() // no hierarchy mounted here
	t.Cleanup(func() { cgroupRoot = root })
	var log bytes.Buffer
	c := detectCgroups(slog.New(slog.NewTextHandler(&log, nil)))
	if c.limitsMemory() {
		t.Fatalf("mode %s without cgroups", c.mode)
	}
	if g, err := c.newCgroup(DefaultLimits()); g != nil || err != nil {
		t.Fatalf("newCgroup = %v, %v", g, err)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "JVM and Node cannot start") {
		t.Errorf("log: %s", log.String())
	}
	lim := DefaultLimits()
	if as := "--as=" + strconv.FormatInt(lim.MemoryBytes, 10); !slices.Contains(rlimitArgs(lim, false), as) || slices.Contains(rlimitArgs(lim, true), as) {
		t.Errorf("RLIMIT_AS only without cgroups: %v / %v", rlimitArgs(lim, false), rlimitArgs(lim, true))
	}
}
