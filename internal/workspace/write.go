package workspace

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

var (
	// ErrSymlink reports a symlink where WriteDir would have to write through it.
	ErrSymlink = errors.New("symlink in path")
	// ErrSpecialFile reports a directory, named pipe, socket or device where
	// WriteDir would write a file. Such a path is never opened: opening a
	// named pipe for writing blocks until someone reads it.
	ErrSpecialFile = errors.New("not a regular file")
	// ErrNoSpace reports a file system without room for what WriteDir writes.
	ErrNoSpace = errors.New("not enough free space")
)

// renameInRoot is os.Root.Rename; a test replaces it to fail part-way.
var renameInRoot = (*os.Root).Rename

// WriteDir writes files under root as one change: all or nothing. Every
// path must be canonical (CleanPath). It first checks every target: a
// symlink anywhere on the way is an ErrSymlink, anything but a regular file
// at a file's own path an ErrSpecialFile, a file where a directory is needed
// an error, too little free space an ErrNoSpace; all problems found are
// reported together and nothing is written. Then each file is written to a
// temporary name in its own directory and only when all are written are
// they renamed into place. If any step fails, root is left as it was:
// temporaries and created directories are removed and replaced files are
// put back. Files get exactly their FileMode; directories are created 0755.
// The os.Root confines every write to root even if the tree changes while
// WriteDir runs. A file whose content and mode are already on disk is left
// alone, its modification time too.
func WriteDir(root string, files []File) error {
	_, err := WriteDirChanges(root, files)
	return err
}

// WriteDirChanges is WriteDir, and says how many files it wrote: those
// whose content or mode differ from what is on disk.
func WriteDirChanges(root string, files []File) (written int, err error) {
	if err := (Limits{}).Check(files); err != nil {
		return 0, fmt.Errorf("write dir %s: %w", root, err)
	}
	made, err := mkdirAll(root)
	if err != nil {
		return 0, fmt.Errorf("write dir: %w", err)
	}
	defer func() {
		if err != nil {
			removeDirs(made)
		}
	}()
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0, fmt.Errorf("write dir: %w", err)
	}
	defer r.Close()
	w := &dirWrite{root: r}
	if err := w.plan(files); err != nil {
		return 0, fmt.Errorf("write dir %s: nothing was written: %w", root, err)
	}
	if err := checkSpace(root, w.bytes); err != nil {
		return 0, fmt.Errorf("write dir %s: nothing was written: %w", root, err)
	}
	if err := w.apply(); err != nil {
		if uerr := w.undo(); uerr != nil {
			return 0, fmt.Errorf("write dir %s: %w; putting the directory back as it was failed too: %w", root, err, uerr)
		}
		return 0, fmt.Errorf("write dir %s: nothing was written: %w", root, err)
	}
	w.dropBackups()
	return len(w.targets), nil
}

// dirWrite is one WriteDir call: what it plans and how far it got, so it
// can be undone.
type dirWrite struct {
	root    *os.Root
	targets []target
	mkdirs  []string // directories to create, parents first
	made    []string // directories created so far
	bytes   int64    // what the files need on disk, roughly
}

type target struct {
	file    File
	existed bool   // a regular file is there and will be replaced
	temp    string // the written temporary, until it is renamed into place
	backup  string // where the replaced file waits until the end
	placed  bool
}

// blockSize rounds sizes for the free-space check: each file takes at
// least one block.
const blockSize = 4096

// plan checks every target before anything is written and records what
// to create. It reports all the problems it finds.
func (w *dirWrite) plan(files []File) error {
	var problems []error
	create := map[string]bool{} // directories seen: true when to be created
	for _, f := range files {
		missing, err := w.planParents(f.Path, create)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		t := target{file: f}
		if !missing {
			if t.existed, err = w.checkTarget(f.Path); err != nil {
				problems = append(problems, err)
				continue
			}
			if t.existed && w.onDisk(f) {
				continue
			}
		}
		w.targets = append(w.targets, t)
		w.bytes += (int64(len(f.Data))/blockSize + 1) * blockSize
	}
	for _, f := range files {
		if _, ok := create[f.Path]; ok {
			problems = append(problems, fmt.Errorf("%s is both a file and a directory of other files", f.Path))
		}
	}
	for _, dir := range w.gitDirs(files) {
		problems = append(problems, fmt.Errorf("%w: with these files %s would hold HEAD, objects and refs as git reads them, "+
			"so git run there would take it for a repository and obey its config: %w", ErrUnsafePath, dirName(dir), ErrVCSMetadata))
	}
	w.bytes += int64(len(w.mkdirs)) * blockSize
	return errors.Join(problems...)
}

// gitDirs lists the directories that git would take for a git directory
// once files are written: the files over what the directory holds already
// (which LoadDir may have left out, or another program put there).
func (w *dirWrite) gitDirs(files []File) []string {
	sized := sizedFiles(files)
	touched := gitDirsTouched(sized)
	if len(touched) == 0 {
		return nil
	}
	planned := newGitTree(sized)
	view := func(dir, name string) gitEntry {
		if e, ok := planned[strings.ToLower(path.Join(dir, name))]; ok {
			return e
		}
		return w.gitEntryOnDisk(path.Join(dir, gitSpelling[name]), name)
	}
	var found []string
	for _, dir := range touched {
		if isGitDir(view, dir) {
			found = append(found, dir)
		}
	}
	return found
}

// gitEntryOnDisk describes p as the git rule needs it. What cannot be
// read safely (a symlink, a named pipe) or fails to read counts as what
// git would accept.
func (w *dirWrite) gitEntryOnDisk(p, name string) gitEntry {
	cautious := gitEntry{exists: true, dir: true} // accessible
	if name == gitHead || name == gitCommonDir {
		cautious = gitEntry{exists: true, size: 1} // content unknown
	}
	info, err := w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return gitEntry{}
	case err != nil || !info.Mode().IsRegular() && !info.IsDir():
		return cautious
	case info.IsDir():
		return gitEntry{exists: true, dir: true}
	}
	e := gitEntry{exists: true, mode: uint32(info.Mode().Perm()), size: info.Size()}
	if name != gitHead && name != gitCommonDir {
		return e
	}
	// Non-blocking, in case a named pipe took the file's place since Lstat.
	f, err := w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return cautious
	}
	defer f.Close()
	lead := make([]byte, headPrefixLen)
	n, err := io.ReadFull(f, lead)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return cautious
	}
	e.lead = lead[:n] // a longer commondir is taken the cautious way
	return e
}

// planParents checks the directories above p; missing says whether p's
// own directory is still to be created.
func (w *dirWrite) planParents(p string, create map[string]bool) (missing bool, err error) {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		c, seen := create[dir]
		if !seen {
			if c, err = w.checkDir(dir, missing); err != nil {
				return false, err
			}
			create[dir] = c
			if c {
				w.mkdirs = append(w.mkdirs, dir)
			}
		}
		missing = c
	}
	return missing, nil
}

// checkDir says whether dir must be created, or why it cannot hold files.
func (w *dirWrite) checkDir(dir string, parentMissing bool) (bool, error) {
	if parentMissing {
		return true, nil
	}
	info, err := w.lstat(dir)
	switch {
	case err != nil:
		return false, err
	case info == nil:
		return true, nil
	case !info.IsDir():
		return false, fmt.Errorf("%s is %s where a directory is needed", dir, kind(info.Mode()))
	}
	return false, nil
}

// checkTarget says whether a regular file is at p, or why p cannot be
// written. Only Lstat looks at it: a named pipe is never opened.
func (w *dirWrite) checkTarget(p string) (bool, error) {
	info, err := w.lstat(p)
	switch {
	case err != nil:
		return false, err
	case info == nil:
		return false, nil
	case !info.Mode().IsRegular():
		return false, fmt.Errorf("%w: %s is %s", ErrSpecialFile, p, kind(info.Mode()))
	}
	return true, nil
}

// onDisk reports whether the regular file at f's path has f's content and
// mode already, so writing it would change nothing but its times.
func (w *dirWrite) onDisk(f File) bool {
	// Non-blocking, in case a named pipe took the file's place since Lstat.
	fh, err := w.root.OpenFile(f.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Mode().Perm() != fs.FileMode(f.FileMode()) || info.Size() != int64(len(f.Data)) {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(fh, int64(len(f.Data))+1))
	return err == nil && bytes.Equal(data, f.Data)
}

// lstat describes p without following it: nil when nothing is there, an
// ErrSymlink for a symlink.
func (w *dirWrite) lstat(p string) (fs.FileInfo, error) {
	info, err := w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case info.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%w: %s", ErrSymlink, p)
	}
	return info, nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a file"
	}
	return "a special file"
}

// apply creates the directories, writes every temporary, then renames
// them into place, keeping each replaced file under a backup name.
func (w *dirWrite) apply() error {
	for _, d := range w.mkdirs {
		if err := w.root.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		w.made = append(w.made, d)
	}
	for i := range w.targets {
		if err := w.writeTemp(&w.targets[i]); err != nil {
			return fmt.Errorf("write %s: %w", w.targets[i].file.Path, err)
		}
	}
	for i := range w.targets {
		if err := w.place(&w.targets[i]); err != nil {
			return fmt.Errorf("put %s in place: %w", w.targets[i].file.Path, err)
		}
	}
	return nil
}

// writeTemp writes t's content to a new file next to its target. O_EXCL
// on a fresh name means nothing that already exists is ever opened.
func (w *dirWrite) writeTemp(t *target) error {
	name := sideName(t.file.Path, sideTemp)
	fh, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	t.temp = name
	mode := fs.FileMode(t.file.FileMode())
	_, werr := fh.Write(t.file.Data)
	// Chmod on the handle sets the exact mode despite the umask.
	return errors.Join(werr, fh.Chmod(mode), fh.Close())
}

func (w *dirWrite) place(t *target) error {
	if t.existed {
		backup := sideName(t.file.Path, sideOriginal)
		if err := renameInRoot(w.root, t.file.Path, backup); err != nil {
			return err
		}
		t.backup = backup
	}
	if err := renameInRoot(w.root, t.temp, t.file.Path); err != nil {
		return err
	}
	t.temp, t.placed = "", true
	return nil
}

// undo puts back every replaced file, removes every new file and
// temporary and the directories created, last first.
func (w *dirWrite) undo() error {
	var errs []error
	for i := len(w.targets) - 1; i >= 0; i-- {
		t := &w.targets[i]
		switch {
		case t.backup != "":
			errs = append(errs, renameInRoot(w.root, t.backup, t.file.Path))
		case t.placed:
			errs = append(errs, w.root.Remove(t.file.Path))
		}
		if t.temp != "" {
			errs = append(errs, w.root.Remove(t.temp))
		}
	}
	for i := len(w.made) - 1; i >= 0; i-- {
		errs = append(errs, w.root.Remove(w.made[i]))
	}
	return errors.Join(errs...)
}

// dropBackups removes the replaced files once every new one is in place.
// A backup left behind costs space, not correctness, so it is only logged.
func (w *dirWrite) dropBackups() {
	for _, t := range w.targets {
		if t.backup == "" {
			continue
		}
		if err := w.root.Remove(t.backup); err != nil {
			slog.Warn("remove the previous version of a replaced file", "path", t.backup, "error", err)
		}
	}
}

const (
	sidePrefix   = ".autocoder-"
	sideRandLen  = 8 // random bytes in a side name
	sideTemp     = "tmp"
	sideOriginal = "orig"
)

// sideName is a fresh hidden name in p's directory. It does not grow with
// p's name, so it fits wherever p fits.
func sideName(p, suffix string) string {
	b := make([]byte, sideRandLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return path.Join(path.Dir(p), sidePrefix+hex.EncodeToString(b)+"."+suffix)
}

// isSideName reports a base name sideName makes: a temporary or backup
// that WriteDir leaves behind only when the process dies mid-write.
func isSideName(name string) bool {
	rest, ok := strings.CutPrefix(name, sidePrefix)
	if !ok {
		return false
	}
	id, suffix, ok := strings.Cut(rest, ".")
	if !ok || (suffix != sideTemp && suffix != sideOriginal) || len(id) != 2*sideRandLen {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}

// mkdirAll creates dir and its missing parents and returns those it
// created, parents first, so a failed write can remove them again.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			removeDirs(made)
			return nil, err
		}
		made = append(made, missing[i])
	}
	return made, nil
}

// removeDirs removes directories mkdirAll created, deepest first; only
// empty ones go.
func removeDirs(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		_ = os.Remove(made[i])
	}
}

// checkSpace fails when the file system holding root has less than need
// bytes free. Where free space cannot be measured, writing goes ahead and
// a full disk is caught, and undone, by apply.
func checkSpace(root string, need int64) error {
	free, ok := freeBytes(root)
	if !ok || free >= uint64(need) {
		return nil
	}
	return fmt.Errorf("%w: the files need about %d KiB and %s has %d KiB free", ErrNoSpace, need>>10, root, free>>10)
}
