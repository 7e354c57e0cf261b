// Package sandbox runs untrusted code: a command over the files of a
// workspace, with no network (or the egress proxy alone), no host
// environment and hard resource limits.
package sandbox

import (
	"context"
	"runtime"
	"time"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Limits bound one run.
type Limits struct {
	Timeout      time.Duration // wall clock; the whole process tree is killed
	MemoryBytes  int64         // memory and swap together
	NanoCPUs     int64         // 1e9 = one core
	Pids         int64
	OutputBytes  int64 // per stream; more is dropped and flagged
	WorkdirBytes int64
	TmpBytes     int64
}

// DefaultLimits suit a unit-test run of a small project. A run may use up
// to defaultCPUs cores: builds and test runners are parallel (go test
// compiles and links on several threads), and the slot limit already
// bounds how many runs share the host.
func DefaultLimits() Limits {
	return Limits{
		Timeout:      2 * time.Minute,
		MemoryBytes:  1 << 30,
		NanoCPUs:     int64(min(runtime.NumCPU(), defaultCPUs)) * 1e9,
		Pids:         256,
		OutputBytes:  1 << 20,
		WorkdirBytes: 256 << 20,
		TmpBytes:     256 << 20,
	}
}

// defaultCPUs caps the cores of one run on a large host.
const defaultCPUs = 4

// Spec says what to run.
type Spec struct {
	Profile string // language profile name: "python" or "go"
	Image   string // docker only: overrides the profile's image
	Files   []workspace.File
	Cmd     []string // argv, run in the workdir
	Limits  Limits
	// Collect asks for the workdir as the run left it (Result.Files).
	Collect bool
	// Network is none (the default) or egress: the proxy at Egress and
	// nothing else. An egress run starts a sandbox of its own.
	Network Network
	Egress  Egress
	// Deps, when set, is a host directory of installed dependencies the
	// run sees at lang.DepsDir: read-only, unless DepsWritable (the
	// install run that fills it). A run with Deps or Env starts a
	// sandbox of its own; on docker, one over a read-only install may
	// take a container made after an earlier run over the same install
	// and Env.
	Deps         string
	DepsWritable bool
	// DepsLink, when set, is a directory of Deps (a relative path) that
	// the run sees read-only at the same path in its workdir too
	// (node_modules). Files of the spec under that path are left out,
	// and the run's collected files never hold what is in it.
	DepsLink string
	// Env adds to the profile's environment (a language's Deps.Env).
	Env map[string]string
}

// Result is what the program did. A failing, timed-out or OOM-killed program
// is a Result, not an error; errors are for failures of the sandbox itself.
type Result struct {
	ExitCode        int
	Stdout          string
	Stderr          string
	StdoutTruncated bool
	StderrTruncated bool
	TimedOut        bool
	OOMKilled       bool
	Duration        time.Duration
	// Files is, with Spec.Collect, the workdir as the run left it: its
	// regular files in workspace order. Symbolic links, devices and other
	// special files the program made are left out, never followed, as are
	// version-control metadata paths. It holds the workdir only when
	// FilesErr is nil.
	Files []workspace.File
	// Unwritable names the files the run made that Files leaves out
	// because their names cannot be written as they are (see
	// workspace.ErrUnwritableName): a newline or escape sequence in them,
	// bytes that are not UTF-8, too long.
	Unwritable []string
	// FilesErr says why Files is not the workdir although Collect was
	// asked: the run was killed before the end (timeout, out of memory),
	// or it left more than the workspace limits allow (ErrTooLarge).
	FilesErr error
}

// Runner runs specs in isolation.
type Runner interface {
	Run(ctx context.Context, spec Spec) (Result, error)
	Name() string
	Close() error
	// Slots is how many runs execute at once; more wait for a slot.
	Slots() int
	// Check says whether sandboxes can run now, for a readiness probe.
	Check(ctx context.Context) error
	// Toolchain names the toolchain the profile's runs get, so that what
	// was built with one is kept apart from another's: on docker its
	// image's ID (the image is built first when missing, as a run would),
	// on bwrap the host's HostToolchain program as a file (path, size,
	// modification time), or "" when the profile names none.
	Toolchain(ctx context.Context, profile string) (string, error)
}
