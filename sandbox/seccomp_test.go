//go:build amd64 || arm64

package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestSeccompRules runs the filter in x/net/bpf's interpreter over the
// calls whose verdict depends on more than their number.
func TestSeccompRules(t *testing.T) {
	vm, err := bpf.NewVM(seccompInstructions())
	if err != nil {
		t.Fatal(err)
	}
	native := uint32(unix.AUDIT_ARCH_AARCH64)
	if runtime.GOARCH == "amd64" {
		native = unix.AUDIT_ARCH_X86_64
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		kill  = unix.SECCOMP_RET_KILL_PROCESS
		eperm = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	)
	// Threads as glibc and the Go runtime make them, and fork.
	thread := uint32(unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD | unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID)
	cases := []struct {
		name      string
		arch, nr  uint32
		arg0Lo    uint32
		arg0Hi    uint32
		want      uint32
		amd64Only bool
	}{
		{name: "read", arch: native, nr: unix.SYS_READ, want: allow},
		{name: "thread", arch: native, nr: unix.SYS_CLONE, arg0Lo: thread, want: allow},
		{name: "fork", arch: native, nr: unix.SYS_CLONE, arg0Lo: uint32(unix.SIGCHLD) | unix.CLONE_CHILD_SETTID | unix.CLONE_CHILD_CLEARTID, want: allow},
		{name: "vfork through clone", arch: native, nr: unix.SYS_CLONE, arg0Lo: unix.CLONE_VM | unix.CLONE_VFORK | uint32(unix.SIGCHLD), want: allow},
		{name: "clone with a user namespace", arch: native, nr: unix.SYS_CLONE, arg0Lo: unix.CLONE_NEWUSER | uint32(unix.SIGCHLD), want: eperm},
		{name: "clone with a network namespace", arch: native, nr: unix.SYS_CLONE, arg0Lo: unix.CLONE_NEWNET | thread, want: eperm},
		{name: "clone ignores the flags' upper half", arch: native, nr: unix.SYS_CLONE, arg0Hi: 0xffffffff, want: allow},
		{name: "clone3", arch: native, nr: unix.SYS_CLONE3, want: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		{name: "unshare of files", arch: native, nr: unix.SYS_UNSHARE, arg0Lo: unix.CLONE_FILES | unix.CLONE_FS, want: allow},
		{name: "unshare of a mount namespace", arch: native, nr: unix.SYS_UNSHARE, arg0Lo: unix.CLONE_NEWNS, want: eperm},
		{name: "unshare of a time namespace", arch: native, nr: unix.SYS_UNSHARE, arg0Lo: unix.CLONE_NEWTIME, want: eperm},
		{name: "setns", arch: native, nr: unix.SYS_SETNS, want: eperm},
		{name: "quotactl_fd", arch: native, nr: unix.SYS_QUOTACTL_FD, want: eperm},
		{name: "a foreign architecture", arch: unix.AUDIT_ARCH_I386, nr: unix.SYS_READ, want: kill},
		{name: "x32", arch: native, nr: x32SyscallBit | unix.SYS_READ, want: kill, amd64Only: true},
	}
	for _, tc := range cases {
		if tc.amd64Only && runtime.GOARCH != "amd64" {
			continue
		}
		// struct seccomp_data, each word where the filter reads it; the
		// interpreter loads words big-endian.
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[seccompNr:], tc.nr)
		binary.BigEndian.PutUint32(data[seccompArch:], tc.arch)
		binary.BigEndian.PutUint32(data[seccompArg0Low:], tc.arg0Lo)
		binary.BigEndian.PutUint32(data[seccompArg0Low+4:], tc.arg0Hi)
		got, err := vm.Run(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if uint32(got) != tc.want {
			t.Errorf("%s: verdict %#x, want %#x", tc.name, got, tc.want)
		}
	}
	for _, nr := range seccompDenied {
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[seccompNr:], nr)
		binary.BigEndian.PutUint32(data[seccompArch:], native)
		if got, _ := vm.Run(data); uint32(got) != eperm {
			t.Errorf("system call %d: verdict %#x, want EPERM", nr, got)
		}
	}
}

// deniedCalls makes each system call with ctypes and prints its name and
// "ok" or the error's name. The numbers are this architecture's, which the
// sandboxes share.
func deniedCalls() string {
	calls := []struct {
		name string
		nr   int
		args string
	}{
		// clone first: after an unshare that worked, this process would be
		// in a namespace without a uid map, where clone fails anyway.
		{"clone", unix.SYS_CLONE, fmt.Sprint(unix.CLONE_NEWUSER|int(unix.SIGCHLD), ", 0, 0, 0, 0")},
		{"unshare", unix.SYS_UNSHARE, fmt.Sprint(unix.CLONE_NEWUSER)},
		{"clone3", unix.SYS_CLONE3, "0, 0"},
		{"setns", unix.SYS_SETNS, "-1, 0"},
		{"keyctl", unix.SYS_KEYCTL, fmt.Sprint(unix.KEYCTL_GET_KEYRING_ID, ", ", unix.KEY_SPEC_SESSION_KEYRING, ", 0")},
		{"add_key", unix.SYS_ADD_KEY, "b'user', b'k', b'v', 1, " + fmt.Sprint(unix.KEY_SPEC_PROCESS_KEYRING)},
		{"mount", unix.SYS_MOUNT, "b'none', b'/tmp', b'tmpfs', 0, 0"},
		{"bpf", unix.SYS_BPF, "0, 0, 0"},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, "0, 0, -1, -1, 0"},
		{"userfaultfd", unix.SYS_USERFAULTFD, "1"}, // UFFD_USER_MODE_ONLY: allowed unprivileged
		{"ptrace", unix.SYS_PTRACE, fmt.Sprint(unix.PTRACE_TRACEME, ", 0, 0, 0")},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, "os.getpid(), 0, 0, 0, 0, 0"},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, "1, 0"},
	}
	var sb strings.Builder
	sb.WriteString(`import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, nr, *args):
    r = libc.syscall(nr, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if r == 0 and name == "clone":
        os._exit(0)  # the child, had the clone worked
    print(name, "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
`)
	for _, c := range calls {
		fmt.Fprintf(&sb, "call(%q, %d, %s)\n", c.name, c.nr, c.args)
	}
	return sb.String()
}

// TestSyscallFilter checks, on both backends, that the code under test
// cannot make a namespace of its own (`unshare -Ur` would make it root
// there), nor reach the kernel's keyrings, mounts, BPF or perf events.
// Docker's default profile allows ptrace, process_vm_readv and, on older
// daemons, io_uring; the bwrap filter refuses them too.
func TestSyscallFilter(t *testing.T) {
	want := map[string]string{
		"unshare": "EPERM", "clone": "EPERM", "clone3": "ENOSYS", "setns": "EPERM", "keyctl": "EPERM", "add_key": "EPERM",
		"mount": "EPERM", "bpf": "EPERM", "perf_event_open": "EPERM", "userfaultfd": "EPERM",
	}
	bwrapOnly := map[string]string{"ptrace": "EPERM", "process_vm_readv": "EPERM", "io_uring_setup": "EPERM"}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, -1)
			res := run(t, r, Spec{Profile: "python", Cmd: []string{"sh", "-c", `grep '^Seccomp:' /proc/self/status
unshare -Ur true && echo NESTED ROOT
unshare -Urm sh -c 'mount -t tmpfs none /tmp && echo MOUNTED'
python3 -c "$0"`, deniedCalls()}})
			if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Seccomp:\t2\n") {
				t.Fatalf("want a seccomp filter (Seccomp: 2): exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
			}
			if strings.Contains(res.Stdout, "NESTED ROOT") || strings.Contains(res.Stdout, "MOUNTED") {
				t.Fatalf("the sandbox made a user namespace: %q", res.Stdout)
			}
			got := map[string]string{}
			for _, line := range strings.Split(res.Stdout, "\n") {
				if name, verdict, ok := strings.Cut(line, " "); ok {
					got[name] = verdict
				}
			}
			for name, verdict := range want {
				if got[name] != verdict {
					t.Errorf("%s: %q, want %s", name, got[name], verdict)
				}
			}
			if be == "bwrap" {
				for name, verdict := range bwrapOnly {
					if got[name] != verdict {
						t.Errorf("%s: %q, want %s", name, got[name], verdict)
					}
				}
			}
		})
	}
}

const (
	// pyThreads starts threads (glibc tries clone3 first), forks and execs.
	pyThreads = `import multiprocessing, subprocess, threading

def test_threads_fork_exec():
    out = []
    ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert sorted(out) == list(range(8))
    assert subprocess.run(["sh", "-c", "echo child"], capture_output=True, text=True).stdout == "child\n"
    p = multiprocessing.get_context("fork").Process(target=print)
    p.start()
    p.join()
    assert p.exitcode == 0
`
	// goThreads makes OS threads of its own and runs a program, in a test
	// that go test builds with its compiler and linker processes.
	goThreads = `package m

import (
	"os/exec"
	"runtime"
	"sync"
	"testing"
)

func TestThreads(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // a new thread for the others
			_ = exec.Command("true").Run()
		}()
	}
	wg.Wait()
	if out, err := exec.Command("sh", "-c", "echo child").Output(); err != nil || string(out) != "child\n" {
		t.Fatalf("%q %v", out, err)
	}
}
`
	// nodeThreads starts a worker thread and a child process, and uses
	// the file system, where libuv may try io_uring.
	nodeThreads = `const { Worker } = require("worker_threads");
const fs = require("fs");
fs.writeFileSync("/tmp/x", "file");
new Worker("require('worker_threads').parentPort.postMessage('worker')", { eval: true })
  .on("message", (m) => console.log(m, require("child_process").execSync("echo child").toString().trim(), fs.readFileSync("/tmp/x", "utf8")));
`
)

// TestSyscallFilterAllowsTestRuns checks that ordinary test runs work under
// the filter: pytest and go test with threads, fork and exec on both
// backends, and on bwrap (which uses the host's toolchains) node and the
// JVM, whose threads use clone with thread flags.
func TestSyscallFilterAllowsTestRuns(t *testing.T) {
	// Under bwrap's RLIMIT_AS fallback (no cgroups), the limit must leave
	// room for the address space V8 and the JVM reserve.
	big := Limits{MemoryBytes: 8 << 30}
	cases := []runtimeCase{
		{name: "pytest", want: "1 passed", spec: Spec{Profile: "python", Files: files("test_t.py", pyThreads)}},
		{name: "go test", want: "ok  \texample.com/m", spec: Spec{Profile: "go", Files: files("go.mod", goMod, "m_test.go", goThreads), Cmd: []string{"go", "test", "-count=1", "./..."}}},
		{name: "node", want: "worker child file", hostTool: "node", spec: Spec{Profile: "python", Files: files("t.js", nodeThreads), Cmd: []string{"node", "t.js"}, Limits: big}},
		{name: "jvm", want: "version", hostTool: "java", spec: Spec{Profile: "python", Cmd: sh("java -version 2>&1"), Limits: big}},
	}
	runRuntimeCases(t, cases, func(t *testing.T, _ Runner, tc runtimeCase, res Result) {
		if res.ExitCode != 0 || !strings.Contains(res.Stdout, tc.want) {
			t.Fatalf("exit %d, want %q in stdout: %q %q", res.ExitCode, tc.want, res.Stdout, res.Stderr)
		}
	})
}
