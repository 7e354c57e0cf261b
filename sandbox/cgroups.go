package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/autocoder/autocoder/internal/owner"
)

// bwrap sandboxes take their memory and process limits from cgroups: the
// kernel then counts what the sandbox uses, where RLIMIT_AS counts what
// each process reserves, and the JVM, V8 and Go reserve far more than they
// use. The modes, best first:
const (
	// cgroupNone: no cgroup can be made; RLIMIT_AS bounds each process.
	cgroupNone = "rlimit"
	// cgroupV2: a delegated v2 tree, our own cgroup with memory and pids
	// enabled for its children.
	cgroupV2 = "cgroup2"
	// cgroupV1: the v1 memory and pids hierarchies, for a root worker.
	cgroupV1 = "cgroup1"
)

// cgroupPrefix starts the name of every cgroup this package makes; the rest
// is the owner's id (host:pid:start) and a sequence number, so that a later
// worker can tell the cgroups of a dead one and remove them.
const cgroupPrefix = "autocoder-sbx."

// cgroupRoot is where the cgroup hierarchies are mounted; tests point it
// elsewhere to see detection fail.
var cgroupRoot = "/sys/fs/cgroup"

// cgroups makes the per-sandbox cgroups of one runner.
type cgroups struct {
	mode string
	// parents are the directories new cgroups go in: one for v2; memory's
	// and pids' for v1.
	parents []string
	owner   string
}

// cgroupSeq numbers the cgroups of this process; its runners share the
// owner id in the names.
var cgroupSeq atomic.Uint64

// cgroup is one sandbox's cgroup: one directory for v2, two for v1.
type cgroup struct {
	mode string
	dirs []string
}

// detectCgroups finds the best mode that works here, proven by making and
// removing a probe cgroup with limits, and reaps the cgroups of dead
// workers. It never fails: without cgroups it says what the fallback
// costs.
func detectCgroups(log *slog.Logger) *cgroups {
	var errs []error
	id := strings.ReplaceAll(owner.ID(), "/", ":")
	for _, find := range []func(id string) (*cgroups, error){findV2, findV1} {
		c, err := find(id)
		if err == nil {
			c.owner = id
			c.reap(log)
			if err = c.probe(); err == nil {
				log.Info("sandbox: bwrap limits memory and processes with cgroups", "mode", c.mode, "parents", c.parents)
				return c
			}
		}
		errs = append(errs, err)
	}
	log.Warn("sandbox: bwrap has no cgroups to limit memory and processes; it falls back to an address-space limit (RLIMIT_AS) per process, under which the JVM and Node cannot start and Go and Python programs fail far below the memory limit; give the worker a delegated cgroup v2 tree or run it as root on a cgroup v1 host",
		"err", errors.Join(errs...))
	return &cgroups{mode: cgroupNone}
}

// limitsMemory reports whether cgroups bound a sandbox's memory.
func (c *cgroups) limitsMemory() bool { return c.mode != cgroupNone }

// ownCgroups maps each hierarchy of /proc/self/cgroup ("memory", "pids",
// "" for v2) to this process's cgroup path in it.
func ownCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, fmt.Errorf("own cgroup: %w", err)
	}
	own := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, ctl := range strings.Split(f[1], ",") {
			own[ctl] = f[2]
		}
	}
	return own, nil
}

// findV2 takes our own v2 cgroup when its memory and pids controllers can
// be enabled for children. A cgroup with processes in it cannot enable
// them (the kernel keeps processes in leaves only), so the worker first
// moves itself into a leaf of its own, as systemd asks of a delegated
// service.
func findV2(id string) (*cgroups, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	path, ok := own[""]
	if !ok {
		return nil, errors.New("cgroup2: this process is in no v2 cgroup")
	}
	dir := filepath.Join(cgroupRoot, path)
	if _, err := os.Stat(filepath.Join(dir, "cgroup.subtree_control")); err != nil {
		// A hybrid host mounts v2 beside v1.
		dir = filepath.Join(cgroupRoot, "unified", path)
	}
	ctls, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup2: %w", err)
	}
	if f := strings.Fields(string(ctls)); !slices.Contains(f, "memory") || !slices.Contains(f, "pids") {
		return nil, fmt.Errorf("cgroup2: memory and pids not delegated to %s (it has %q)", dir, strings.TrimSpace(string(ctls)))
	}
	enable := func() error {
		return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids"), 0)
	}
	if err := enable(); errors.Is(err, syscall.EBUSY) {
		leaf := filepath.Join(dir, cgroupPrefix+id+":worker")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("cgroup2 worker leaf: %w", err)
		}
		if err := writeFile(leaf, "cgroup.procs", strconv.Itoa(os.Getpid())); err != nil {
			return nil, fmt.Errorf("cgroup2 worker leaf: %w", err)
		}
		err = enable()
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup2 subtree_control: %w", err)
	}
	return &cgroups{mode: cgroupV2, parents: []string{dir}}, nil
}

// findV1 takes our own cgroups in the v1 memory and pids hierarchies. The
// new cgroups are their children, so whatever limits the worker's own
// cgroups have still bound its sandboxes together.
func findV1(string) (*cgroups, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	c := &cgroups{mode: cgroupV1}
	for _, ctl := range []string{"memory", "pids"} {
		path, ok := own[ctl]
		if !ok {
			return nil, fmt.Errorf("cgroup1: no %s hierarchy", ctl)
		}
		dir := filepath.Join(cgroupRoot, ctl, path)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			return nil, fmt.Errorf("cgroup1 %s: %w", ctl, err)
		}
		c.parents = append(c.parents, dir)
	}
	return c, nil
}

// probe makes and removes a cgroup with limits.
func (c *cgroups) probe() error {
	// Numbered like the others: two runners may start at once.
	g, err := c.create("probe-"+strconv.FormatUint(cgroupSeq.Add(1), 10), DefaultLimits())
	if err != nil {
		return err
	}
	return g.remove()
}

// newCgroup makes a sandbox's cgroup with its memory, swap and pids limits.
func (c *cgroups) newCgroup(lim Limits) (*cgroup, error) {
	if !c.limitsMemory() {
		return nil, nil
	}
	return c.create(strconv.FormatUint(cgroupSeq.Add(1), 10), lim)
}

func (c *cgroups) create(name string, lim Limits) (*cgroup, error) {
	g := &cgroup{mode: c.mode}
	for _, p := range c.parents {
		d := filepath.Join(p, cgroupPrefix+c.owner+":"+name)
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = g.remove()
			return nil, fmt.Errorf("cgroup create: %w", err)
		}
		g.dirs = append(g.dirs, d)
	}
	mem, pids := strconv.FormatInt(lim.MemoryBytes, 10), strconv.FormatInt(lim.Pids, 10)
	// Memory and swap together, as docker's MemorySwap: a sandbox that
	// swapped would only be slower to hit its limit. The swap limit files
	// exist only where the kernel accounts swap.
	var settings [][3]string // dir, file, value
	if c.mode == cgroupV2 {
		settings = [][3]string{{g.dirs[0], "memory.max", mem}, {g.dirs[0], "memory.swap.max", "0"}, {g.dirs[0], "pids.max", pids}}
	} else {
		// memsw may never be below the memory limit: set that first.
		settings = [][3]string{{g.dirs[0], "memory.limit_in_bytes", mem}, {g.dirs[0], "memory.memsw.limit_in_bytes", mem}, {g.dirs[1], "pids.max", pids}}
	}
	for _, s := range settings {
		err := writeFile(s[0], s[1], s[2])
		swap := strings.Contains(s[1], "swap") || strings.Contains(s[1], "memsw")
		if swap && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			_ = g.remove()
			return nil, fmt.Errorf("cgroup limit: %w", err)
		}
	}
	return g, nil
}

// add moves a process into the cgroup; children it starts after this stay.
func (g *cgroup) add(pid int) error {
	if g == nil {
		return nil
	}
	for _, d := range g.dirs {
		if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup add: %w", err)
		}
	}
	return nil
}

// oomKilled reports whether the kernel killed a process of the cgroup for
// its memory limit. An old v1 kernel without the oom_kill counter leaves
// failcnt (the limit was hit) and a SIGKILL to tell it.
func (g *cgroup) oomKilled(exitCode int) bool {
	if g == nil {
		return false
	}
	file := "memory.events"
	if g.mode == cgroupV1 {
		file = "memory.oom_control"
	}
	if n, ok := readCounter(filepath.Join(g.dirs[0], file), "oom_kill"); ok {
		return n > 0
	}
	if g.mode == cgroupV1 && exitCode == 128+int(syscall.SIGKILL) {
		b, err := os.ReadFile(filepath.Join(g.dirs[0], "memory.failcnt"))
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return err == nil && n > 0
	}
	return false
}

// kill kills every process in the cgroup until none is left. v1 has no
// cgroup.kill: each pid listed is killed, and the list read again, for
// a process may fork between the read and its kill; the pids limit bounds
// how many it can make.
func (g *cgroup) kill() {
	if g == nil {
		return
	}
	if g.mode == cgroupV2 && writeFile(g.dirs[0], "cgroup.kill", "1") == nil {
		return
	}
	for _, d := range g.dirs {
		for range 1000 {
			b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			pids := strings.Fields(string(b))
			if err != nil || len(pids) == 0 {
				break
			}
			for _, p := range pids {
				if pid, err := strconv.Atoi(p); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// remove kills what is left in the cgroup and removes it. A killed process
// leaves its cgroup only once it has exited, so rmdir is retried for a
// while.
func (g *cgroup) remove() error {
	if g == nil {
		return nil
	}
	g.kill()
	var errs []error
	for _, d := range g.dirs {
		var err error
		for i := range 200 {
			if err = os.Remove(d); err == nil || errors.Is(err, fs.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(time.Duration(min(i+1, 20)) * time.Millisecond)
			if i%10 == 9 {
				g.kill()
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cgroup remove: %w", err))
		}
	}
	return errors.Join(errs...)
}

// reap removes the cgroups that dead workers of this host left behind.
func (c *cgroups) reap(log *slog.Logger) {
	host, _ := os.Hostname()
	for _, p := range c.parents {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
			if !ok || !e.IsDir() {
				continue
			}
			i := strings.LastIndexByte(rest, ':')
			if i < 0 {
				continue
			}
			if gone, local := owner.Gone(strings.ReplaceAll(rest[:i], ":", "/"), host); !gone || !local {
				continue
			}
			g := &cgroup{mode: c.mode, dirs: []string{filepath.Join(p, e.Name())}}
			if err := g.remove(); err != nil {
				log.Warn("sandbox: cannot remove the cgroup of a dead worker", "cgroup", g.dirs[0], "err", err)
				continue
			}
			log.Info("sandbox: removed the cgroup of a dead worker", "cgroup", g.dirs[0])
		}
	}
}

// readCounter reads the value of key from a cgroup file of "key value"
// lines; ok is false when the key is missing.
func readCounter(path, key string) (int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, err := strconv.ParseInt(v, 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// writeFile writes one value to a cgroup control file, which must exist.
func writeFile(dir, name, value string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s %s: %w", filepath.Join(dir, name), value, err)
	}
	return nil
}
