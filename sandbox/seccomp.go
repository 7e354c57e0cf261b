//go:build amd64 || arm64

package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The bwrap backend's seccomp filter. Namespaces, capabilities dropped and
// no_new_privs leave the kernel's whole system-call surface open to the
// code under test; a nested user namespace (`unshare -Ur`) even makes it
// root there, which opens mount, network and keyring code written for
// root. The filter closes what a test run never needs and kernel exploits
// often start from. Denied calls fail with EPERM, as under Docker's default
// profile, so a tool that probes for a feature falls back instead of
// dying. The program is classic BPF, assembled with golang.org/x/net/bpf
// (already a dependency; no cgo, no libseccomp) and handed to bwrap, which
// installs it right before it starts the sandbox's first process.

// Offsets into struct seccomp_data. Both architectures built here are
// little-endian, so the low half of the first argument comes first.
const (
	seccompNr      = 0
	seccompArch    = 4
	seccompArg0Low = 16
)

// x32SyscallBit marks the x32 ABI's system calls on amd64. They share the
// x86_64 audit arch but not its numbers, so the filter kills them.
const x32SyscallBit = 0x40000000

// The clone and unshare flags that make a namespace. CLONE_NEWTIME is
// unshare's only: in clone's flags that bit is part of the exit signal.
const (
	cloneNamespaces   = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET
	unshareNamespaces = cloneNamespaces | unix.CLONE_NEWTIME
)

// seccompDenied fail with EPERM in a bwrap sandbox.
var seccompDenied = []uint32{
	// Joining another namespace (making one is checked by its flags).
	unix.SYS_SETNS,
	// Mounts. Without a namespace of its own the sandbox may not mount;
	// denied here too, so that a flaw needs to get past both.
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR,
	unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	// Kernel keyrings.
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	// Reading and writing other processes.
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	// Programs run in the kernel, page faults handled in user space, and
	// io_uring: the common starting points of kernel exploits. Tools that
	// use io_uring (libuv) fall back to plain calls when it is refused,
	// and Docker's default profile refuses it too.
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	// The host's administration: privileged anyway, never a test's business.
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT, unix.SYS_ACCT, unix.SYS_QUOTACTL, unix.SYS_QUOTACTL_FD,
}

// seccompFilter returns the filter for the running architecture as bwrap
// reads it: an array of struct sock_filter.
func seccompFilter() ([]byte, error) {
	raw, err := bpf.Assemble(seccompInstructions())
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	b := make([]byte, 0, 8*len(raw))
	for _, ins := range raw {
		b = binary.NativeEndian.AppendUint16(b, ins.Op)
		b = append(b, ins.Jt, ins.Jf)
		b = binary.NativeEndian.AppendUint32(b, ins.K)
	}
	return b, nil
}

// seccompInstructions builds the filter. Every check returns at once, so
// each jump skips a fixed number of instructions. Recent kernels cache the
// verdict for each call whose answer does not depend on its arguments, so
// the length of the list costs an allowed call nothing there.
func seccompInstructions() []bpf.Instruction {
	ret := func(v uint32) bpf.Instruction { return bpf.RetConstant{Val: v} }
	allow := ret(unix.SECCOMP_RET_ALLOW)
	kill := ret(unix.SECCOMP_RET_KILL_PROCESS)
	deny := ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	audit := uint32(unix.AUDIT_ARCH_AARCH64)
	if runtime.GOARCH == "amd64" {
		audit = unix.AUDIT_ARCH_X86_64
	}
	// A call of another ABI (i386 through int 0x80, arm32 compat) has other
	// numbers: this filter cannot judge it, and no test needs one.
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: audit, SkipTrue: 1},
		kill,
		bpf.LoadAbsolute{Off: seccompNr, Size: 4},
	}
	if runtime.GOARCH == "amd64" {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1}, kill)
	}
	// clone3 passes its flags in memory, which a filter cannot read. ENOSYS
	// makes glibc (threads, posix_spawn) fall back to clone.
	p = append(p,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipFalse: 1},
		ret(unix.SECCOMP_RET_ERRNO|uint32(unix.ENOSYS)))
	// Threads and fork pass clone flags without namespaces (the JVM's
	// threads too); only the namespace bits are refused. Both calls ignore
	// the upper half of their flags argument.
	for _, c := range []struct{ nr, flags uint32 }{{unix.SYS_CLONE, cloneNamespaces}, {unix.SYS_UNSHARE, unshareNamespaces}} {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: c.nr, SkipFalse: 4},
			bpf.LoadAbsolute{Off: seccompArg0Low, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: c.flags, SkipFalse: 1},
			deny,
			allow)
	}
	for _, nr := range seccompDenied {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, deny)
	}
	return append(p, allow)
}
