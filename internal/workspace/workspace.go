// Package workspace holds the file set a task works on and the rules every
// path proposed by a user or a model must obey before it touches disk.
package workspace

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/autocoder/autocoder/internal/truncate"
)

// File is one file of a workspace. Path is slash-separated and relative.
type File struct {
	Path string
	Mode uint32 // permission bits; 0 means 0o644
	Data []byte
}

// Limits bound what one workspace may hold.
type Limits struct {
	MaxFileBytes  int64
	MaxFiles      int
	MaxTotalBytes int64
}

// DefaultLimits are generous for source trees and small enough to keep a
// snapshot cheap to store and to copy into a sandbox.
var DefaultLimits = Limits{MaxFileBytes: 1 << 20, MaxFiles: 5000, MaxTotalBytes: 64 << 20}

// ErrUnsafePath reports a path that could escape the workspace.
var ErrUnsafePath = errors.New("unsafe path")

// ErrVCSMetadata reports a path inside version-control metadata (.git,
// .hg, .svn and their aliases). Such files are configuration that host
// tools execute on their own (git runs core.fsmonitor and hooks at the next
// `git status` or commit), so no workspace may hold them. Errors carrying
// it also carry ErrUnsafePath.
var ErrVCSMetadata = errors.New("version-control metadata is never part of a workspace")

// ErrTooLarge reports a file or workspace over its Limits.
var ErrTooLarge = errors.New("over the workspace limits")

// Limits of the file systems a workspace is written to: the sandbox's
// tmpfs, the user's disk, and the tar that carries files between them.
const (
	// MaxNameBytes is the longest name of one path component: NAME_MAX of
	// Linux file systems (ext4, xfs, tmpfs, overlayfs) and of APFS.
	MaxNameBytes = 255
	// MaxPathBytes is the longest path: Linux's PATH_MAX (4096 with its
	// NUL) less room for the directory the workspace is unpacked into
	// (the sandbox's /work, a temporary directory), so that tar can still
	// open the file by its path there.
	MaxPathBytes = 4000
)

// quotedBytes bounds a path an error quotes: one line's worth, whatever
// the path's length.
const quotedBytes = 80

// ErrUnwritableName reports a path no file system or terminal keeps as
// written: a control character or escape sequence in it, bytes that are
// not UTF-8, or a name or path longer than MaxNameBytes or MaxPathBytes.
// Errors carrying it also carry ErrUnsafePath.
var ErrUnwritableName = errors.New("the name cannot be written as it is")

// CleanPath validates a relative, slash-separated path and returns its
// canonical form. Absolute paths, "..", empty names, backslashes and NUL
// bytes are rejected: the path names a file inside the workspace or nothing.
// So is any path with a version-control directory among its parts (see
// IsVCSName), wherever it appears, and any path that cannot be written
// faithfully (ErrUnwritableName): checked here, every path from the model,
// a run or the user's directory obeys the limits before a file is made,
// rather than failing later in tar or in the user's directory.
func CleanPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: empty path", ErrUnsafePath)
	}
	if strings.ContainsAny(p, "\x00\\") {
		return "", fmt.Errorf("%w: %q contains a NUL byte or backslash", ErrUnsafePath, truncate.Quote(p, quotedBytes))
	}
	if err := writable(p); err != nil {
		return "", err
	}
	if strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("%w: %q is absolute", ErrUnsafePath, truncate.Quote(p, quotedBytes))
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q leaves the workspace", ErrUnsafePath, truncate.Quote(p, quotedBytes))
		}
		if len(part) > MaxNameBytes {
			return "", fmt.Errorf("%w: %w: the name %q is %d bytes, more than the %d a file system allows; use a shorter name",
				ErrUnsafePath, ErrUnwritableName, truncate.Quote(part, quotedBytes), len(part), MaxNameBytes)
		}
		if IsVCSName(part) {
			return "", fmt.Errorf("%w: %q: %w", ErrUnsafePath, truncate.Quote(p, quotedBytes), ErrVCSMetadata)
		}
	}
	c := path.Clean(p)
	if c == "." || c == "" {
		return "", fmt.Errorf("%w: %q names no file", ErrUnsafePath, truncate.Quote(p, quotedBytes))
	}
	return c, nil
}

// writable refuses what a file name cannot faithfully hold: a path over
// MaxPathBytes, bytes that are not UTF-8 (JSON, which carries snapshots and
// transcripts, would replace them), and control characters (a newline
// splits the NUL-less lists tools read; ESC and the C1 controls start
// terminal escape sequences that `ls` or `git status` would play).
func writable(p string) error {
	if len(p) > MaxPathBytes {
		return fmt.Errorf("%w: %w: the path %q is %d bytes, more than the %d allowed; use a shorter path",
			ErrUnsafePath, ErrUnwritableName, truncate.Quote(p, quotedBytes), len(p), MaxPathBytes)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: %w: %q is not valid UTF-8", ErrUnsafePath, ErrUnwritableName, truncate.Quote(p, quotedBytes))
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Errorf("%w: %w: %q holds the control character %U (a newline, tab or escape sequence); use a name of printable characters",
				ErrUnsafePath, ErrUnwritableName, truncate.Quote(p, quotedBytes), r)
		}
	}
	return nil
}

// vcsNames are the metadata directories of version-control systems, in
// lower case. Each holds configuration its tool executes (git's
// core.fsmonitor and hooks, Mercurial's and Jujutsu's hooks and aliases).
var vcsNames = map[string]bool{".git": true, ".hg": true, ".svn": true, ".bzr": true, "_darcs": true, ".jj": true}

// IsVCSName reports whether one path component names version-control
// metadata on some file system: compared case-insensitively, ignoring the
// code points HFS+ drops, an NTFS stream suffix (".git::$INDEX_ALLOCATION")
// and the trailing dots and spaces Windows drops, and matching 8.3 short
// names such as "GIT~1". These are the aliases git itself guards against.
func IsVCSName(name string) bool {
	n := strings.Map(dropIgnorable, strings.ToLower(name))
	if i := strings.IndexByte(n, ':'); i >= 0 {
		n = n[:i]
	}
	n = strings.TrimRight(n, ". ")
	if vcsNames[n] {
		return true
	}
	stem, num, ok := strings.Cut(n, "~")
	return ok && num != "" && strings.Trim(num, "0123456789") == "" && vcsNames["."+stem]
}

// dropIgnorable removes the zero-width code points HFS+ ignores in names,
// so ".g\u200cit" is ".git" there.
func dropIgnorable(r rune) rune {
	switch {
	case r >= 0x200c && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x206a && r <= 0x206f, r == 0xfeff:
		return -1
	}
	return r
}

// Check validates every path and the limits; it reports the first problem.
func (l Limits) Check(files []File) error {
	return l.CheckSized(sizedFiles(files))
}

func sizedFiles(files []File) []Sized {
	sized := make([]Sized, len(files))
	for i, f := range files {
		sized[i] = Sized{Path: f.Path, Size: int64(len(f.Data)), Mode: f.FileMode(), Lead: GitLead(f.Path, f.Data)}
	}
	return sized
}

// Sized is what a limit check needs of a file: its path, size and mode
// and, for the files git reads to tell a repository (see GitLead), their
// leading bytes; nil when not known, which the check takes the cautious way.
type Sized struct {
	Path string
	Size int64
	Mode uint32
	Lead []byte
}

// CheckSized is Check for a workspace known by its paths and sizes, as a
// snapshot's manifest knows it.
func (l Limits) CheckSized(files []Sized) error {
	var total int64
	if l.MaxFiles > 0 && len(files) > l.MaxFiles {
		return fmt.Errorf("%w: workspace has %d files, more than the limit of %d", ErrTooLarge, len(files), l.MaxFiles)
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		c, err := CleanPath(f.Path)
		if err != nil {
			return err
		}
		if c != f.Path {
			return fmt.Errorf("%w: %q is not in canonical form %q", ErrUnsafePath, f.Path, c)
		}
		if seen[c] {
			return fmt.Errorf("%w: duplicate path %q", ErrUnsafePath, c)
		}
		seen[c] = true
		if l.MaxFileBytes > 0 && f.Size > l.MaxFileBytes {
			return fmt.Errorf("%w: file %q is %d bytes, more than the limit of %d", ErrTooLarge, f.Path, f.Size, l.MaxFileBytes)
		}
		total += f.Size
	}
	if l.MaxTotalBytes > 0 && total > l.MaxTotalBytes {
		return fmt.Errorf("%w: workspace holds %d bytes, more than the limit of %d", ErrTooLarge, total, l.MaxTotalBytes)
	}
	if dirs := GitDirectories(files); len(dirs) > 0 {
		return fmt.Errorf("%w: %s holds HEAD, objects and refs as git reads them, so git run there would take it for a repository and obey its config: %w",
			ErrUnsafePath, dirName(dirs[0]), ErrVCSMetadata)
	}
	return nil
}

// Sort orders files by path, the canonical order everywhere.
func Sort(files []File) {
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
}

// ByPath indexes files by their paths.
func ByPath(files []File) map[string]File {
	m := make(map[string]File, len(files))
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

// FileMode returns the file's permission bits with the default applied.
func (f File) FileMode() uint32 {
	if f.Mode == 0 {
		return 0o644
	}
	return f.Mode & 0o777
}

// dirName names a workspace directory for a person: "" is the root.
func dirName(dir string) string {
	if dir == "" {
		return "the workspace root"
	}
	return fmt.Sprintf("%q", dir+"/")
}
