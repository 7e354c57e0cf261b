package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/autocoder/autocoder/internal/testenv"
)

// helperEnv makes the test binary a second worker process instead of a
// test run: "check BACKEND" runs one check and prints its result; "hold
// BACKEND" fills a pool, starts an endless run and waits to be killed.
const helperEnv = "AUTOCODER_SANDBOX_TEST_HELPER"

// otherTaskLimits are the limits of the runs the fork bomb must not
// disturb; the bomb has the same, so with a shared count it takes all.
var otherTaskLimits = Limits{Pids: 100, Timeout: time.Minute}

func helperMain(mode string) int {
	kind, backend, _ := strings.Cut(mode, " ")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	switch kind {
	case "check":
		r, err := New(ctx, Config{Backend: backend, PoolSize: -1, Profiles: testProfiles("python")})
		if err != nil {
			fmt.Println("new:", err)
			return 1
		}
		defer r.Close()
		res, err := r.Run(ctx, Spec{Profile: "python", Files: files("test_a.py", pyPass), Limits: otherTaskLimits})
		if err != nil {
			fmt.Println("run:", err)
			return 1
		}
		out, _ := json.Marshal(res)
		fmt.Println(string(out))
		if res.ExitCode != 0 {
			return 1
		}
		return 0
	case "hold":
		return hold(ctx, backend)
	}
	fmt.Println("unknown helper mode", mode)
	return 2
}

// loopMarker names the processes of the endless run of "hold".
const loopMarker = "sleep 7315"

// hold fills a warm pool and starts a run that never ends; once all are
// up, it prints what identifies its sandboxes: the owner label of its
// containers, or the host uids of its warm bwrap sandboxes.
func hold(ctx context.Context, backend string) int {
	r, err := New(ctx, Config{Backend: backend, PoolSize: 2, Profiles: testProfiles("python"), Warm: []string{"python"}})
	if err != nil {
		fmt.Println("new:", err)
		return 1
	}
	go func() {
		_, err := r.Run(context.Background(), Spec{Profile: "python", Limits: Limits{Timeout: 10 * time.Minute},
			Cmd: sh("while :; do " + loopMarker + "; done")})
		fmt.Println("run ended:", err)
	}()
	for ctx.Err() == nil {
		ids, full := warmIDs(r)
		if full && len(hostProcsWith(loopMarker)) > 0 {
			fmt.Println("ready", strings.Join(ids, " "))
			<-ctx.Done() // bounded, should the test die first
			return 1
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Println("sandboxes did not start")
	return 1
}

// warmIDs reports whether a runner's pools are full and what identifies
// its sandboxes (see hold).
func warmIDs(r Runner) (ids []string, full bool) {
	full = true
	switch b := inner(r).(type) {
	case *dockerRunner:
		ids = []string{b.owner}
		for _, pl := range b.allPools() {
			full = full && pl.full()
		}
	case *bwrapRunner:
		for _, pl := range b.pools {
			full = full && pl.full()
			for _, p := range pl.snapshot() {
				ids = append(ids, strconv.FormatUint(uint64(p.uid.uid), 10))
			}
		}
	}
	return ids, full
}

// startHelper runs the test binary as another worker process; its stdout
// comes back line by line.
func startHelper(t *testing.T, mode string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewScanner(out)
}

func TestDevShmCapped(t *testing.T) {
	// Files of 8 MB stay under the file-size limit: only the mount's size
	// can stop the total.
	script := `i=0
while [ $i -lt 40 ] && head -c 8000000 /dev/zero > /dev/shm/f$i 2>/dev/null; do i=$((i+1)); done
cat /dev/shm/* | wc -c
touch /dev/evil 2>/dev/null && echo "/dev writable"
exit 0`
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, -1)
			res := run(t, r, Spec{Profile: "python", Cmd: sh(script)})
			lines := strings.Fields(res.Stdout)
			if res.ExitCode != 0 || len(lines) == 0 {
				t.Fatalf("%+v", res)
			}
			if n, _ := strconv.ParseInt(lines[0], 10, 64); n > shmBytes || n < shmBytes/2 {
				t.Errorf("wrote %d bytes to /dev/shm, want at most %d (and at least half)", n, shmBytes)
			}
			if strings.Contains(res.Stdout, "/dev writable") {
				t.Error("a file was created in /dev")
			}
		})
	}
}

// TestForkBombSparesOtherTasks runs a fork bomb for its whole timeout and,
// meanwhile, another run of the same runner and a check in another worker
// process: both pass at their first attempt.
func TestForkBombSparesOtherTasks(t *testing.T) {
	type outcome struct {
		res Result
		err error
	}
	for i, be := range backends {
		t.Run(be, func(t *testing.T) {
			// A marker of its own: the processes of the other backend's
			// bomb may still be exiting.
			marker := strconv.Itoa(73140 + i)
			bomb := Spec{Profile: "python", Limits: Limits{Pids: otherTaskLimits.Pids, Timeout: 30 * time.Second}, Cmd: []string{"python3", "-c", forkBomb(marker, "time.sleep("+marker+")")}}
			r := testRunner(t, be, -1)
			bombed := make(chan outcome, 1)
			go func() {
				res, err := r.Run(context.Background(), bomb)
				bombed <- outcome{res, err}
			}()
			var last outcome
			ended := false // the bomb's outcome was received
			t.Cleanup(func() {
				if !ended {
					<-bombed
				}
			})
			deadline := time.Now().Add(20 * time.Second)
			for len(hostProcsWith(marker)) < int(otherTaskLimits.Pids)-10 {
				if time.Now().After(deadline) {
					t.Fatalf("the bomb did not take its processes: %d", len(hostProcsWith(marker)))
				}
				time.Sleep(100 * time.Millisecond)
			}
			_, out := startHelper(t, "check "+be)
			res := run(t, r, Spec{Profile: "python", Files: files("test_a.py", pyPass), Limits: otherTaskLimits})
			if res.ExitCode != 0 {
				t.Errorf("a run beside the bomb failed: %+v", res)
			}
			var lines []string
			for out.Scan() {
				lines = append(lines, out.Text())
			}
			var other Result
			if len(lines) == 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &other) != nil || other.ExitCode != 0 {
				t.Errorf("another worker's check beside the bomb failed: %q", lines)
			}
			select {
			case last = <-bombed:
				ended = true
				t.Fatalf("the bomb ended before the other runs did: %+v %v", last.res, last.err)
			default:
			}
			last, ended = <-bombed, true
			if last.err != nil || !last.res.TimedOut {
				t.Errorf("the bomb did not run to its timeout: %+v %v", last.res, last.err)
			}
		})
	}
}

// killHeldWorker starts a worker process that holds warm sandboxes and one
// running an endless loop, kills it with SIGKILL, and returns what
// identifies its sandboxes and when it was killed.
func killHeldWorker(t *testing.T, backend string) ([]string, time.Time) {
	t.Helper()
	cmd, out := startHelper(t, "hold "+backend)
	var ids []string
	for out.Scan() {
		if rest, ok := strings.CutPrefix(out.Text(), "ready "); ok {
			ids = strings.Fields(rest)
			break
		}
	}
	if len(ids) == 0 {
		t.Fatal("the worker process did not start its sandboxes")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return ids, time.Now()
}

// TestBwrapSandboxesDieWithWorker: no process of a worker's bwrap
// sandboxes, warm or running, outlives it by more than a moment.
func TestBwrapSandboxesDieWithWorker(t *testing.T) {
	testRunner(t, "bwrap", -1) // skips without bwrap
	uids, killed := killHeldWorker(t, "bwrap")
	for {
		left := hostProcsWith(loopMarker)
		for _, uid := range uids {
			left = append(left, procsOfUID(uid)...)
		}
		if len(left) == 0 {
			t.Logf("no sandbox process left %v after the kill", time.Since(killed).Round(10*time.Millisecond))
			return
		}
		if time.Since(killed) > 3*time.Second {
			t.Fatalf("sandbox processes left 3s after their worker was killed: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// procsOfUID lists the live host processes whose real uid is uid; a
// zombie waiting for init to reap it holds nothing.
func procsOfUID(uid string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		fields := map[string][]string{}
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.Fields(v)
			}
		}
		if uids := fields["Uid"]; len(uids) > 0 && uids[0] == uid && len(fields["State"]) > 0 && fields["State"][0] != "Z" {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestContainersDieWithWorker kills a worker process outright while it
// holds warm containers and one running an endless loop: they stop at
// once, and a live runner removes them within seconds.
func TestContainersDieWithWorker(t *testing.T) {
	d := inner(testRunner(t, "docker", -1)).(*dockerRunner)
	ids, killed := killHeldWorker(t, "docker")
	ownerID := ids[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owned := make(client.Filters).Add("label", labelOwner+"="+ownerID)
	t.Cleanup(func() {
		list, _ := d.cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: owned})
		for _, c := range list.Items {
			d.remove(c.ID)
		}
	})
	for _, c := range []struct {
		what   string
		status string
		within time.Duration
	}{
		{"running", "running", 3 * time.Second},
		{"left", "", 2*reapEvery + 2*time.Second},
	} {
		for {
			opts := client.ContainerListOptions{All: c.status == "", Filters: owned.Clone()}
			if c.status != "" {
				opts.Filters = opts.Filters.Add("status", c.status)
			}
			list, err := d.cli.ContainerList(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) == 0 {
				t.Logf("no container %s %v after the kill", c.what, time.Since(killed).Round(100*time.Millisecond))
				break
			}
			if time.Since(killed) > c.within {
				t.Fatalf("%d containers %s %v after their worker was killed", len(list.Items), c.what, c.within)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// TestUIDPoolLeasesAreExclusive takes uids from two pools over one lock
// directory, as two workers of a host do: no uid is handed out twice while
// held, and all are in the range.
func TestUIDPoolLeasesAreExclusive(t *testing.T) {
	dir := t.TempDir()
	var pools []*uidPool
	for range 2 {
		p, err := newUIDPool(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Both start at the same place, the worst case.
		p.next.Store(7)
		pools = append(pools, p)
	}
	held := map[uint32]*uidLease{}
	for range 50 {
		for _, p := range pools {
			l, err := p.acquire()
			if err != nil {
				t.Fatal(err)
			}
			if held[l.uid] != nil {
				t.Fatalf("uid %d handed out twice", l.uid)
			}
			if l.uid < uidPoolBase || l.uid >= uidPoolBase+uidPoolSize {
				t.Fatalf("uid %d outside the range", l.uid)
			}
			held[l.uid] = l
		}
	}
	for uid, l := range held {
		l.release()
		delete(held, uid)
	}
	pools[0].next.Store(7)
	l, err := pools[0].acquire()
	if err != nil || l.uid != uidPoolBase+8 {
		t.Fatalf("a released uid was not free again: %v %v", l, err)
	}
	l.release()
}

// TestBwrapSharedUIDFallback: when the uid range cannot be used (here, its
// lock directory belongs to someone else), a root worker's sandboxes still
// run, as one shared uid, and the log says what that costs.
func TestBwrapSharedUIDFallback(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.RequireService(t, "a root test process (the uid range is for root workers)", fmt.Errorf("running as uid %d", os.Geteuid()))
	}
	dir := t.TempDir()
	if err := os.Chown(dir, sandboxUID, sandboxUID); err != nil {
		t.Fatal(err)
	}
	defer func(d string) { uidPoolDir = d }(uidPoolDir)
	uidPoolDir = dir
	var logs strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := New(ctx, Config{Backend: "bwrap", PoolSize: -1, Profiles: testProfiles("python"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		testenv.RequireService(t, "bwrap backend", err)
	}
	defer r.Close()
	res := run(t, r, Spec{Profile: "python", Cmd: []string{"python3", "-c", "print('ran')"}})
	if res.ExitCode != 0 || res.Stdout != "ran\n" {
		t.Fatalf("%+v", res)
	}
	if !strings.Contains(logs.String(), "cannot give each sandbox a uid of its own") {
		t.Fatalf("no warning in the log: %s", logs.String())
	}
}

// TestLocalhostServes: a test may serve and call on the loopback by the
// name localhost, over TCP and UDP (a syslog client), and resolve its
// own host name, as on a developer's machine; the sandbox learns nothing
// of the host's resolvers.
func TestLocalhostServes(t *testing.T) {
	script := `import socket
srv = socket.create_server(("localhost", 0))
c = socket.create_connection(("localhost", srv.getsockname()[1]), timeout=5)
conn, _ = srv.accept()
c.sendall(b"ping")
print("tcp", conn.recv(4).decode())
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(("localhost", 514))
u.send(b"<14>hello")
print("udp ok")
print("self", socket.gethostbyname(socket.gethostname()))
try:
    print("resolv", open("/etc/resolv.conf").read().split())
except OSError:
    print("resolv none")
`
	hostResolv, _ := os.ReadFile("/etc/resolv.conf")
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, -1)
			res := run(t, r, Spec{Profile: "python", Cmd: []string{"python3", "-c", script}})
			if res.ExitCode != 0 {
				t.Fatalf("exit %d:\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
			}
			for _, want := range []string{"tcp ping\n", "udp ok\n", "self 127.0.0.1\n"} {
				if !strings.Contains(res.Stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, res.Stdout)
				}
			}
			for _, f := range strings.Fields(string(hostResolv)) {
				if net.ParseIP(f) != nil && !net.ParseIP(f).IsLoopback() && strings.Contains(res.Stdout, f) {
					t.Errorf("the sandbox sees the host's resolver %s:\n%s", f, res.Stdout)
				}
			}
		})
	}
}
