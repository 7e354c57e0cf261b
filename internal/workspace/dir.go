package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrLimit reports a directory too large to load as a workspace.
var ErrLimit = errors.New("workspace limit exceeded")

// LoadOptions tunes LoadDir.
type LoadOptions struct {
	Limits Limits // the zero value means DefaultLimits
}

// SkipReason says why LoadDir left a path out.
type SkipReason string

// The reasons LoadDir skips a path.
const (
	SkipExcludedDir SkipReason = "excluded directory" // version-control metadata
	SkipCache       SkipReason = "cache or build output"
	SkipIgnored     SkipReason = "matched .gitignore"
	SkipBinary      SkipReason = "binary"
	SkipTooLarge    SkipReason = "too large"
	SkipSymlink     SkipReason = "symlink"
	SkipSpecial     SkipReason = "not a regular file"
	SkipUnsafeName  SkipReason = "unsafe name"
	SkipLeftover    SkipReason = "leftover of an interrupted write" // WriteDir's temporaries and backups
)

// Skipped is one path LoadDir left out. A skipped directory stands for
// everything beneath it.
type Skipped struct {
	Path   string
	Reason SkipReason
}

// Summary reports what LoadDir kept and what it skipped.
type Summary struct {
	Files   int
	Bytes   int64
	Skipped []Skipped
}

// Count returns how many paths were skipped for reason.
func (s Summary) Count(reason SkipReason) int {
	n := 0
	for _, sk := range s.Skipped {
		if sk.Reason == reason {
			n++
		}
	}
	return n
}

// binarySniff is how much of a file is searched for a NUL byte, as git does.
const binarySniff = 8 << 10

// LoadDir reads the project under root as workspace files in path order.
// It skips version-control metadata (.git, .hg, ...), caches and build
// output of known toolchains (isOutputDir) whatever the project says,
// paths the project's ignore files ignore (every .gitignore and
// .git/info/exclude, as git reads them), binary and oversize files, and
// anything that is not a regular file; symlinks are never followed. It
// fails with ErrLimit when what remains exceeds the file count or total
// size limit.
//
// The rules are read here rather than asked of git (ls-files
// --exclude-standard): the same files are uploaded whether or not the
// project is a repository and git is installed, and nothing of the
// repository's configuration runs.
func LoadDir(root string, opts LoadOptions) ([]File, Summary, error) {
	limits := opts.Limits
	if limits == (Limits{}) {
		limits = DefaultLimits
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, Summary{}, fmt.Errorf("load dir: %w", err)
	}
	defer r.Close()
	ignore, err := newIgnoreRules(r)
	if err == nil {
		err = ignore.readDir(r, "")
	}
	if err != nil {
		return nil, Summary{}, fmt.Errorf("load dir: read ignore files: %w", err)
	}

	var files []File
	var sum Summary
	skip := func(p string, reason SkipReason) { sum.Skipped = append(sum.Skipped, Skipped{p, reason}) }
	err = fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			skip(p, SkipSymlink)
			return nil
		case IsVCSName(d.Name()):
			skip(p, SkipExcludedDir)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir() && isOutputDir(r, p):
			skip(p, SkipCache)
			return fs.SkipDir
		case ignore.ignored(p, d.IsDir()):
			skip(p, SkipIgnored)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir():
			return ignore.readDir(r, p)
		case isSideName(d.Name()):
			skip(p, SkipLeftover)
			return nil
		case !d.Type().IsRegular():
			skip(p, SkipSpecial)
			return nil
		}
		if c, err := CleanPath(p); err != nil || c != p {
			skip(p, SkipUnsafeName)
			return nil
		}
		f, reason, err := readRegular(r, p, limits.MaxFileBytes)
		if err != nil {
			return err
		}
		if reason != "" {
			skip(p, reason)
			return nil
		}
		files = append(files, f)
		sum.Files++
		sum.Bytes += int64(len(f.Data))
		if limits.MaxFiles > 0 && sum.Files > limits.MaxFiles {
			return fmt.Errorf("%w: more than %d files", ErrLimit, limits.MaxFiles)
		}
		if limits.MaxTotalBytes > 0 && sum.Bytes > limits.MaxTotalBytes {
			return fmt.Errorf("%w: more than %d bytes", ErrLimit, limits.MaxTotalBytes)
		}
		return nil
	})
	if err != nil {
		return nil, sum, fmt.Errorf("load dir %s: %w", root, err)
	}
	Sort(files) // the walk visits "a/b" before "a.txt"; byte order does not
	return files, sum, nil
}

// readRegular reads one file, or says why it is skipped. The size and type
// are checked on the open handle, so a file swapped after the walk saw it
// is judged by what is actually read.
func readRegular(r *os.Root, p string, maxBytes int64) (File, SkipReason, error) {
	fh, err := r.Open(p)
	if err != nil {
		return File{}, "", err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return File{}, "", err
	}
	if !info.Mode().IsRegular() {
		return File{}, SkipSpecial, nil
	}
	if maxBytes > 0 && info.Size() > maxBytes {
		return File{}, SkipTooLarge, nil
	}
	src := io.Reader(fh)
	if maxBytes > 0 {
		src = io.LimitReader(fh, maxBytes+1) // the file may grow while read
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return File{}, "", err
	}
	if maxBytes > 0 && int64(len(data)) > maxBytes {
		return File{}, SkipTooLarge, nil
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return File{}, SkipBinary, nil
	}
	return File{Path: p, Mode: uint32(info.Mode().Perm()), Data: data}, "", nil
}
