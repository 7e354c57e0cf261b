package sandbox

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// egressLibDir is where the sandbox finds a dynamically linked
// forwarder's loader and libraries.
const egressLibDir = "/run/autocoder/lib"

// forwarder is the egress forwarder (package sandbox/forward) as the
// sandbox mounts and starts it: the executable alone when it is static;
// when it is dynamically linked, its loader and libraries too, taken from
// the host, and it starts through that loader (ld.so --library-path), so
// that it runs in any image, one without the host's C library or with
// none at all.
type forwarder struct {
	path string // host path of the executable
	// loader is its ELF interpreter (host path, file name in egressLibDir),
	// none when it is static; libs are the libraries it needs, likewise.
	loader [2]string
	libs   [][2]string
}

// StaticForwarder reports whether the forwarder at path is statically
// linked: mounted alone, with nothing of the host's beside it.
func StaticForwarder(path string) (bool, error) {
	f, err := newForwarder(path)
	if err != nil {
		return false, err
	}
	return f.loader[0] == "", nil
}

// CheckForwarder reports whether the executable at path can serve as the
// egress forwarder of sandbox runs (Config.Forwarder), and why not.
func CheckForwarder(path string) error {
	_, err := newForwarder(path)
	return err
}

// newForwarder checks the executable at path and finds what it needs to
// run in a sandbox: it must be an ELF executable of this machine that
// the sandbox's user may read and run; a dynamically linked one needs its
// loader and every library it names (DT_NEEDED, recursively), as the
// host's loader would find them.
func newForwarder(path string) (*forwarder, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: egress forwarder %q is not an absolute path", ErrInvalidSpec, path)
	}
	if err := readableByAll(path); err != nil {
		return nil, fmt.Errorf("%w: egress forwarder: %w", ErrInvalidSpec, err)
	}
	// What is mounted is the file itself: a bind mount of a symlink
	// would resolve it inside the sandbox, or not at all.
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("%w: egress forwarder: %w", ErrInvalidSpec, err)
	}
	fw := &forwarder{path: real}
	f, err := elf.Open(real)
	if err != nil {
		return nil, fmt.Errorf("%w: egress forwarder %s: %w (it must be a Linux executable: autocoder itself, or CGO_ENABLED=0 go build ./sandbox/cmd/egress-forward)", ErrInvalidSpec, path, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return nil, fmt.Errorf("%w: egress forwarder %s is not an executable (ELF type %s)", ErrInvalidSpec, path, f.Type)
	}
	interp, err := interpreter(f)
	if err != nil {
		return nil, fmt.Errorf("%w: egress forwarder %s: %w", ErrInvalidSpec, path, err)
	}
	if interp == "" {
		return fw, nil
	}
	fw.loader[1] = filepath.Base(interp)
	if fw.loader[0], err = filepath.EvalSymlinks(interp); err != nil {
		return nil, fmt.Errorf("%w: egress forwarder %s: its loader: %w", ErrInvalidSpec, path, err)
	}
	if err := readableByAll(fw.loader[0]); err != nil {
		return nil, fmt.Errorf("%w: egress forwarder %s: its loader: %w", ErrInvalidSpec, path, err)
	}
	if fw.libs, err = neededLibs(f, path, filepath.Base(interp)); err != nil {
		return nil, fmt.Errorf("%w: egress forwarder %s: %w", ErrInvalidSpec, path, err)
	}
	return fw, nil
}

// readableByAll checks that path is a regular file (after symlinks) that
// any user may read: the sandbox's user is not the worker's.
func readableByAll(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o004 == 0 {
		return fmt.Errorf("%s is not readable by other users, as the sandbox's user is (chmod o+r)", path)
	}
	return nil
}

// interpreter is the ELF interpreter f names (PT_INTERP), "" for none.
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return "", fmt.Errorf("read its interpreter: %w", err)
		}
		return strings.TrimRight(string(b), "\x00"), nil
	}
	return "", nil
}

// neededLibs resolves the libraries exe needs, and theirs, on the host:
// each object's own search path (DT_RUNPATH, DT_RPATH), then the
// loader's configuration (/etc/ld.so.conf) and its default directories.
// The loader itself (loaderName) is left out. A library must match exe's
// class and machine, as the loader would require.
func neededLibs(exe *elf.File, exePath, loaderName string) ([][2]string, error) {
	system := append(ldConfDirs("/etc/ld.so.conf", 0), "/lib64", "/usr/lib64", "/lib", "/usr/lib")
	var libs [][2]string
	seen := map[string]bool{loaderName: true}
	type object struct {
		f    *elf.File
		path string
	}
	queue := []object{{exe, exePath}}
	for len(queue) > 0 {
		obj := queue[0]
		queue = queue[1:]
		needed, err := obj.f.DynString(elf.DT_NEEDED)
		if err != nil {
			return nil, fmt.Errorf("read the libraries %s needs: %w", obj.path, err)
		}
		dirs := append(searchPath(obj.f, obj.path), system...)
		for _, name := range needed {
			if seen[name] {
				continue
			}
			seen[name] = true
			lib, path, err := findLib(name, dirs, exe)
			if err != nil {
				return nil, err
			}
			libs = append(libs, [2]string{path, name})
			queue = append(queue, object{lib, path})
		}
		if obj.f != exe {
			obj.f.Close()
		}
	}
	return libs, nil
}

// searchPath is an object's own library directories, $ORIGIN expanded.
func searchPath(f *elf.File, path string) []string {
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				d = strings.NewReplacer("${ORIGIN}", filepath.Dir(path), "$ORIGIN", filepath.Dir(path)).Replace(d)
				if filepath.IsAbs(d) {
					dirs = append(dirs, d)
				}
			}
		}
	}
	return dirs
}

// findLib finds the library name in dirs: the first file there of exe's
// class and machine, opened, with its real path.
func findLib(name string, dirs []string, exe *elf.File) (*elf.File, string, error) {
	for _, d := range dirs {
		p, err := filepath.EvalSymlinks(filepath.Join(d, name))
		if err != nil || readableByAll(p) != nil {
			continue
		}
		lib, err := elf.Open(p)
		if err != nil {
			continue
		}
		if lib.Class == exe.Class && lib.Machine == exe.Machine {
			return lib, p, nil
		}
		lib.Close()
	}
	return nil, "", fmt.Errorf("the library %s it needs is not on this host (searched %s)", name, strings.Join(dirs, ", "))
}

// ldConfDirs are the directories a loader configuration file names,
// following its include lines.
func ldConfDirs(path string, depth int) []string {
	f, err := os.Open(path)
	if err != nil || depth > 8 {
		return nil
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0 || fields[0] == "hwcap":
		case fields[0] == "include":
			for _, pattern := range fields[1:] {
				if !filepath.IsAbs(pattern) {
					pattern = filepath.Join(filepath.Dir(path), pattern)
				}
				matches, _ := filepath.Glob(pattern)
				slices.Sort(matches)
				for _, m := range matches {
					dirs = append(dirs, ldConfDirs(m, depth+1)...)
				}
			}
		default:
			for _, d := range strings.FieldsFunc(line, func(r rune) bool { return r == ':' || r == ',' || r == ' ' || r == '\t' }) {
				if filepath.IsAbs(d) {
					dirs = append(dirs, d)
				}
			}
		}
	}
	return dirs
}

// mounts are the forwarder's host paths and where the sandbox sees them.
func (fw *forwarder) mounts() [][2]string {
	m := [][2]string{{fw.path, egressForwarder}}
	if fw.loader[0] != "" {
		for _, l := range append([][2]string{fw.loader}, fw.libs...) {
			m = append(m, [2]string{l[0], egressLibDir + "/" + l[1]})
		}
	}
	return m
}

// command is how the sandbox starts the forwarder. Through the loader,
// the program's argv[0] is still egressForwarder, whose base name tells
// autocoder's executable to be the forwarder.
func (fw *forwarder) command() []string {
	if fw.loader[0] == "" {
		return []string{egressForwarder}
	}
	return []string{egressLibDir + "/" + fw.loader[1], "--library-path", egressLibDir, egressForwarder}
}
