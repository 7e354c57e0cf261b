package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/workspace"
)

// Errors of the sandbox itself, as opposed to failures of the program.
var (
	// ErrInvalidSpec reports a spec that cannot run: bad file names, sizes
	// over the workdir limit, an empty command.
	ErrInvalidSpec = errors.New("invalid sandbox spec")
	// ErrImageMissing reports a docker image that is not on the host.
	ErrImageMissing = errors.New("sandbox image missing (build it with scripts/build-images.sh)")
	// ErrUnavailable reports that no sandbox backend can run on this host.
	ErrUnavailable = errors.New("no sandbox backend available")
	// ErrSetup reports that the sandbox could not unpack the workspace.
	ErrSetup = errors.New("sandbox setup failed")
	// ErrClosed reports a run on a closed Runner.
	ErrClosed = errors.New("sandbox runner closed")
)

// setupFailed is the exit code and stderr marker of the entry script when
// it cannot unpack the workspace; the user command has not run then.
const (
	setupExitCode     = 125
	setupExitCodeText = "125"
	setupMarker       = "autocoder-sandbox: setup failed"
)

// entryScript runs inside the sandbox as `sh -c entryScript sbx SEED WARM
// READY WATCH`. Its stdin carries a line with the host's clock (unix
// seconds), the collect token ("-" for none), the end token and the
// shell-quoted command, then a tar of the workspace. The command travels
// on stdin so that a container can be started before the run it serves is
// known. Past the ready marker only
// shell builtins and tar run before the command: every program started here
// is latency the run pays.
//
// SEED, when not empty, is read-only pre-built Go build caches, joined by
// ":". GOCACHE must be writable, so it becomes a tree of real directories
// with symlinks to the seeds' files, each laid over the ones before: Go
// reads entries it finds and writes new ones beside them, and all that
// costs no copy. A failure to lay the first empties GOCACHE; a later one
// may leave part of its links, each as good as the others. This happens before stdin is read, so a
// warm container has it done before its run arrives. Its trim.txt is made
// anew with the run's date: Go trims a cache whose last trim is over a day
// old, and would throw away the seed's entries once the seed is five days
// old. WARM, when not empty,
// is the profile's Prewarm snippet. READY, when not empty, is written to
// stderr once the sandbox waits for its input.
//
// WATCH, when not empty, ties the sandbox to its host process: stdin stays
// open after the workspace, and the end of stdin, which comes when the
// host process dies, kills the shell and so the whole container (whose
// main process it is). The shell waits for the command instead of
// becoming it, and exits with its status. The tar is padded to whole
// records so that tar stops at its end without waiting for stdin to close.
//
// With a collect token the shell waits for the command too, then kills
// whatever the command left running (so nothing changes the files while
// they are read), and writes to stdout a newline, the files marker with the
// token, the workdir's regular files as NUL-terminated paths ending with an
// empty one (missing if they could not be listed), and a tar of the files
// the run wrote: one find and, if it wrote any, one tar, each a process the
// run waits for. The find stays on the workdir's own file system: a deps
// link mounted in it is the install's, not the run's. Both backends keep the
// workdir on a tmpfs that ends with the sandbox, so the files leave on the
// stream that carries the output. The workspace is unpacked with
// modification times of 0, so a file with a later one was written by the
// run; the others are the input's and need not travel back. A program that
// learned the token could only forge files it could have written anyway:
// the host reads all this as untrusted input (collected).
//
// With WATCH the shell ends by killing whatever the command left running
// (collecting first, if it does), and once its process namespace holds
// nothing but the init process and itself, writes the end lines
// (endMarker) with the end token: only shell builtins, reading /proc and
// the container's own memory cgroup. So when the host has read them,
// nothing of the run is left; while something is still going down the
// script writes none, and the host asks the daemon. A program that learned
// the token (by reading the shell's memory) could end its run early with
// a status of its choice, as it could by exiting, or hide a memory kill
// from the result; its timeout holds whatever it writes.
const entryScript = `watch=$4
if [ -n "$1" ]; then
	seeds=$1: n=0
	while [ -n "$seeds" ]; do
		seed=${seeds%%:*}
		seeds=${seeds#*:}
		n=$((n + 1))
		[ -d "$seed" ] || continue
		if [ $n = 1 ]; then
			cp -rs "$seed"/. "$GOCACHE" 2>/dev/null || { rm -rf "$GOCACHE"; break; }
		else
			cp -rs --remove-destination "$seed"/. "$GOCACHE" 2>/dev/null
		fi
	done
	rm -f "$GOCACHE/trim.txt"
fi
if [ -n "$2" ]; then
	(mkdir -p ` + prewarmDir + ` && cd ` + prewarmDir + ` && eval "$2") >/dev/null 2>&1 </dev/null
	rm -rf ` + prewarmDir + `
fi
[ -z "$3" ] || printf '%s\n' "$3" >&2
read -r now collect end cmd || exit ` + setupExitCodeText + `
[ ! -d "$GOCACHE" ] || echo "$now" > "$GOCACHE/trim.txt"
nl='
'
if ! err=$(tar -x -f - -C ` + workDir + ` --no-same-owner 2>&1); then
	printf '%s: %s\n' "` + setupMarker + `" "$err" >&2
	exit ` + setupExitCodeText + `
fi
cd ` + workDir + `
eval "set -- $cmd"
[ -n "$watch" ] || [ "$collect" != - ] || exec "$@" </dev/null
if [ -n "$watch" ]; then
	exec 3<&0
	(while read -r _; do :; done; kill -KILL $$) <&3 &
fi
"$@" </dev/null 3<&- &
wait $!
status=$?
[ -n "$watch" ] || [ "$collect" != - ] || exit $status
kill -s KILL -- -1 2>/dev/null
if [ "$collect" != - ]; then
	printf '\n%s %s\n' "` + collectMarker + `" "$collect"
	written=` + tmpDir + `/.written-$collect
	find . -xdev -type f -print0 -newermt @0 -fprint0 "$written" 2>/dev/null && printf '\0' &&
		{ [ ! -s "$written" ] || tar -c -f - --null --no-recursion -T "$written" 2>/dev/null; }
fi
[ -n "$watch" ] || exit $status
wait
n=0
while [ $n -lt 5000 ]; do
	left=
	for p in /proc/[0-9]*; do
		case ${p#/proc/} in 1 | $$) ;; *) left=$p && break ;; esac
	done
	[ -n "$left" ] || break
	kill -s KILL -- -1 2>/dev/null
	n=$((n + 1))
done
[ -z "$left" ] || exit $status
oom=-
for f in /sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control; do
	[ -r "$f" ] || continue
	while read -r k v; do [ "$k" != oom_kill ] || oom=$v; done <"$f"
	break
done
printf '\n%s %s %s %s\n' "` + endMarker + `" "$end" "$status" "$oom"
printf '\n%s %s\n' "` + endMarker + `" "$end" >&2
exit $status
`

// collectMarker, a space and the run's collect token start the workdir's
// listing and tar on stdout.
const collectMarker = "autocoder-sandbox: files"

// withDefaults fills zero limits from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	set := func(v *int64, def int64) {
		if *v <= 0 {
			*v = def
		}
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	set(&l.MemoryBytes, d.MemoryBytes)
	set(&l.NanoCPUs, d.NanoCPUs)
	set(&l.Pids, d.Pids)
	set(&l.OutputBytes, d.OutputBytes)
	set(&l.WorkdirBytes, d.WorkdirBytes)
	set(&l.TmpBytes, d.TmpBytes)
	return l
}

// job is a validated spec, ready for a backend.
type job struct {
	profile Profile
	image   string
	limits  Limits
	argv    []string
	// stdin is the entry script's input: command and workspace tar.
	stdin []byte
	// collect, when not empty, is the stdout marker before the tar of
	// the workdir, unique to the run.
	collect string
	end     string           // the token of the docker entry script's end lines
	files   workspace.Limits // of the collected workdir
	input   []workspace.File // the files the run starts with, when it collects
	route   *route           // nil unless the run reaches the egress proxy
	extra   extra            // the deps dir and added variables
}

// extra is what a run adds to its profile's sandbox: a dependency
// directory and variables. Its zero value adds nothing, and only a run
// that adds nothing can take a warm sandbox.
type extra struct {
	deps         string // host directory mounted at lang.DepsDir
	depsWritable bool
	link         string   // a directory of deps also mounted at workDir/link, read-only
	env          []string // KEY=VALUE
}

func (x extra) none() bool { return x.deps == "" && len(x.env) == 0 }

// seeds are the read-only build caches the entry script lays, in this
// order, into a Go run's GOCACHE, joined by ":" ("" for none): the
// profile's (p.GoCache: the standard library), and the install's
// (lang.DepsGoCache: its modules' packages) where the run mounts,
// read-only, an install whose warm-up left one.
func (x extra) seeds(p Profile) string {
	var s []string
	if p.GoCache != "" {
		s = append(s, p.GoCache)
	}
	if p.Env["GOCACHE"] != "" && x.deps != "" && !x.depsWritable {
		rel, _ := strings.CutPrefix(lang.DepsGoCache, lang.DepsDir)
		if fi, err := os.Stat(filepath.Join(x.deps, rel)); err == nil && fi.IsDir() {
			s = append(s, lang.DepsGoCache)
		}
	}
	return strings.Join(s, ":")
}

// linkMount is the host directory and the sandbox path of the deps link.
func (x extra) linkMount() (string, string) {
	return filepath.Join(x.deps, x.link), path.Join(workDir, x.link)
}

// visible are the files of the workspace the deps link leaves in view:
// what is under it in the workdir is the install's.
func (x extra) visible(files []workspace.File) []workspace.File {
	if x.link == "" {
		return files
	}
	return slices.DeleteFunc(slices.Clone(files), func(f workspace.File) bool {
		return f.Path == x.link || strings.HasPrefix(f.Path, x.link+"/")
	})
}

// extraOf checks a spec's deps directory, its link and variables.
func extraOf(spec Spec) (extra, error) {
	x := extra{deps: spec.Deps, depsWritable: spec.DepsWritable, link: spec.DepsLink}
	if x.deps != "" {
		if fi, err := os.Stat(x.deps); err != nil || !fi.IsDir() || !filepath.IsAbs(x.deps) {
			return extra{}, fmt.Errorf("%w: deps %q is not an absolute path to a directory", ErrInvalidSpec, x.deps)
		}
	}
	if x.link != "" {
		// The install's own code made the directory: a symbolic link
		// there would show the sandbox whatever it points to.
		p, err := workspace.CleanPath(x.link)
		if x.deps == "" || err != nil || p != x.link {
			return extra{}, fmt.Errorf("%w: deps link %q is not a relative path in a deps directory", ErrInvalidSpec, x.link)
		}
		if fi, err := os.Lstat(filepath.Join(x.deps, x.link)); err != nil || !fi.IsDir() {
			return extra{}, fmt.Errorf("%w: deps link %q is not a directory of %s", ErrInvalidSpec, x.link, x.deps)
		}
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return extra{}, fmt.Errorf("%w: variable %q", ErrInvalidSpec, k)
		}
		x.env = append(x.env, k+"="+v)
	}
	sort.Strings(x.env)
	return x, nil
}

// prepare validates the spec and encodes its input. Nothing touches disk
// before this succeeds.
func prepare(profiles profileSet, fw *forwarder, spec Spec) (job, error) {
	p, err := profiles.lookup(spec.Profile)
	if err != nil {
		return job{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	lim := spec.Limits.withDefaults()
	argv := spec.Cmd
	if len(argv) == 0 {
		argv = p.TestCmd
	}
	if argv[0] == "" {
		return job{}, fmt.Errorf("%w: empty command", ErrInvalidSpec)
	}
	for _, a := range argv {
		if strings.ContainsRune(a, 0) {
			return job{}, fmt.Errorf("%w: NUL byte in command", ErrInvalidSpec)
		}
	}
	x, err := extraOf(spec)
	if err != nil {
		return job{}, err
	}
	files := x.visible(spec.Files)
	wsLimits := workspace.DefaultLimits
	wsLimits.MaxTotalBytes = lim.WorkdirBytes
	if err := wsLimits.Check(files); err != nil {
		return job{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	tb, err := tarFiles(files)
	if err != nil {
		return job{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	rt, err := egressRoute(spec, fw)
	if err != nil {
		return job{}, err
	}
	if rt != nil {
		argv = rt.wrap(argv)
	}
	quoted := shellQuote(argv)
	token, collect, input := "-", "", []workspace.File(nil)
	if spec.Collect {
		input = files
		token = randomHex(16)
		collect = "\n" + collectMarker + " " + token + "\n"
	}
	end := randomHex(16)
	var in bytes.Buffer
	in.Grow(len(quoted) + len(tb) + 96)
	in.WriteString(strconv.FormatInt(time.Now().Unix(), 10))
	in.WriteByte(' ')
	in.WriteString(token)
	in.WriteByte(' ')
	in.WriteString(end)
	in.WriteByte(' ')
	in.WriteString(quoted)
	in.WriteByte('\n')
	in.Write(tb)
	image := spec.Image
	if image == "" {
		image = p.Image
	}
	return job{profile: p, image: image, limits: lim, argv: argv, stdin: in.Bytes(), collect: collect, end: end, files: collectLimits(lim), input: input, route: rt, extra: x}, nil
}

// tarRecord is GNU tar's default record size (20 blocks of 512 bytes).
const tarRecord = 20 * 512

// tarFiles encodes checked files, with their parent directories first so
// that tar never has to guess their modes.
func tarFiles(files []workspace.File) ([]byte, error) {
	// Room, in the usual case, for each file's header and padded content
	// and a directory header, and the trailer and record padding, so the
	// buffer is allocated once rather than grown by copying.
	size := 2 * tarRecord
	for _, f := range files {
		size += 3*512 + len(f.Data)
	}
	var buf bytes.Buffer
	buf.Grow(size)
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	mtime := time.Unix(0, 0)
	sorted := append([]workspace.File(nil), files...)
	workspace.Sort(sorted)
	for _, f := range sorted {
		parts := strings.Split(f.Path, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: mtime}); err != nil {
				return nil, fmt.Errorf("tar dir: %w", err)
			}
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: int64(f.FileMode()), Size: int64(len(f.Data)), ModTime: mtime}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("tar header: %w", err)
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, fmt.Errorf("tar data: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar close: %w", err)
	}
	// GNU tar reads a pipe in whole records; a short last record would
	// make it wait for the end of stdin.
	buf.Write(make([]byte, (tarRecord-buf.Len()%tarRecord)%tarRecord))
	return buf.Bytes(), nil
}

// shellQuote renders argv as one line of words for `eval "set -- ..."`:
// newlines inside arguments become the entry script's $nl.
var quoteReplacer = strings.NewReplacer("'", `'\''`, "\n", `'"$nl"'`)

func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + quoteReplacer.Replace(a) + "'"
	}
	return strings.Join(q, " ")
}

// capWriter keeps the first max bytes and counts, then drops, the rest, so
// a flood of output costs no memory and never blocks the producer.
type capWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int64
	dropped int64
}

func newCapWriter(max int64) *capWriter { return &capWriter{max: max} }

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - int64(w.buf.Len())
	if room < 0 {
		room = 0
	}
	if int64(len(p)) <= room {
		w.buf.Write(p)
		return len(p), nil
	}
	w.buf.Write(p[:room])
	w.dropped += int64(len(p)) - room
	return len(p), nil
}

// bytes returns what was kept and whether anything was dropped.
func (w *capWriter) bytes() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Bytes(), w.dropped > 0
}

func (w *capWriter) result() (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String(), w.dropped > 0
}

// outputs are the capped streams of a run and, when it collects files,
// the splitter that takes the workdir's tar off stdout.
type outputs struct {
	stdout, stderr *capWriter
	split          *splitter // nil unless the run collects files
	files          workspace.Limits
	input          []workspace.File
}

func newOutputs(j job) outputs {
	o := outputs{stdout: newCapWriter(j.limits.OutputBytes), stderr: newCapWriter(j.limits.OutputBytes), files: j.files, input: j.input}
	if j.collect != "" {
		o.split = newSplitter(j.collect, o.stdout, newCapWriter(tarStreamMax(j.files)))
	}
	return o
}

// stdoutWriter is where the sandbox's stdout goes.
func (o outputs) stdoutWriter() io.Writer {
	if o.split != nil {
		return o.split
	}
	return o.stdout
}

// fill copies the captured output and files into r and reports whether
// the entry script failed before the user command ran.
func (o outputs) fill(r *Result) error {
	if o.split != nil {
		o.split.flush()
	}
	r.Stdout, r.StdoutTruncated = o.stdout.result()
	r.Stderr, r.StderrTruncated = o.stderr.result()
	if r.ExitCode == setupExitCode && strings.HasPrefix(r.Stderr, setupMarker) && !r.TimedOut {
		return fmt.Errorf("%w: %s", ErrSetup, strings.TrimSpace(r.Stderr))
	}
	if o.split != nil {
		r.Files, r.Unwritable, r.FilesErr = o.split.files(o.input, o.files, r.TimedOut || r.OOMKilled)
	}
	return nil
}
