package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

// ErrNotCollected reports, in Result.FilesErr, a run whose workdir did not
// come back. When the run left too much, it wraps workspace.ErrTooLarge too.
var ErrNotCollected = errors.New("workdir not collected")

// collectLimits bound the collected workdir: what a workspace may hold, and
// no more than the workdir itself.
func collectLimits(lim Limits) workspace.Limits {
	l := workspace.DefaultLimits
	l.MaxTotalBytes = min(l.MaxTotalBytes, lim.WorkdirBytes)
	return l
}

// tarStreamMax bounds the tar bytes kept of a workdir within l: the files'
// contents plus headers and padding for as many entries again in
// directories, links and special files.
func tarStreamMax(l workspace.Limits) int64 {
	return l.MaxTotalBytes + int64(l.MaxFiles)*2*3*512 + tarRecord
}

// splitter passes a sandbox's stdout on until the collect marker and the
// bytes after it to the tar buffer. The marker may arrive split across
// writes, so a tail that could be its start is held back.
type splitter struct {
	marker  []byte
	out     io.Writer
	tar     *capWriter
	found   bool
	pending []byte
}

func newSplitter(marker string, out io.Writer, tar *capWriter) *splitter {
	return &splitter{marker: []byte(marker), out: out, tar: tar}
}

func (s *splitter) Write(p []byte) (int, error) {
	if s.found {
		return s.tar.Write(p)
	}
	data := append(s.pending, p...)
	if i := bytes.Index(data, s.marker); i >= 0 {
		s.found = true
		s.pending = nil
		if _, err := s.out.Write(data[:i]); err != nil {
			return 0, err
		}
		if _, err := s.tar.Write(data[i+len(s.marker):]); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	keep := min(len(data), len(s.marker)-1)
	if _, err := s.out.Write(data[:len(data)-keep]); err != nil {
		return 0, err
	}
	s.pending = append([]byte(nil), data[len(data)-keep:]...)
	return len(p), nil
}

// flush passes on what was held back when the stream ends without the
// marker.
func (s *splitter) flush() {
	if !s.found && len(s.pending) > 0 {
		_, _ = s.out.Write(s.pending)
		s.pending = nil
	}
}

// files reads the collected workdir, and the names of files left out of
// it because their names cannot be written as they are.
func (s *splitter) files(input []workspace.File, l workspace.Limits, killed bool) ([]workspace.File, []string, error) {
	if !s.found {
		if killed {
			return nil, nil, fmt.Errorf("%w: the run was killed before it ended", ErrNotCollected)
		}
		return nil, nil, fmt.Errorf("%w: the sandbox sent no files", ErrNotCollected)
	}
	raw, dropped := s.tar.bytes()
	if dropped {
		return nil, nil, fmt.Errorf("%w: %w: the workdir's listing and archive are over %d bytes", ErrNotCollected, workspace.ErrTooLarge, s.tar.max)
	}
	files, unwritable, err := collected(raw, input, l)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNotCollected, err)
	}
	return files, unwritable, nil
}

// collected rebuilds the workdir from what the sandbox sent after the
// marker: the listing of its regular files, then a tar of those the run
// wrote. A listed file that is not in the tar is the input's, unchanged; a
// listed file that is neither (made with a modification time of 0, as
// `cp -p` of an input file or `touch -d @0` would) is left out with the
// special files. The result must fit l. Listed files whose names
// CleanPath refuses as unwritable (a newline, an escape sequence, too
// long) are left out too, and returned by name, so the run's caller can
// say so rather than drop them silently.
func collected(raw []byte, input []workspace.File, l workspace.Limits) ([]workspace.File, []string, error) {
	var listed, unwritable []string
	for {
		i := bytes.IndexByte(raw, 0)
		if i < 0 {
			return nil, nil, errors.New("the workdir's listing has no end")
		}
		name := string(raw[:i])
		raw = raw[i+1:]
		if name == "" {
			break
		}
		p := strings.TrimPrefix(name, "./")
		listed = append(listed, p)
		if l.MaxFiles > 0 && len(listed) > l.MaxFiles {
			return nil, nil, fmt.Errorf("%w: the workdir holds more than %d files", workspace.ErrTooLarge, l.MaxFiles)
		}
		if _, err := workspace.CleanPath(p); errors.Is(err, workspace.ErrUnwritableName) {
			unwritable = append(unwritable, p)
		}
	}
	written, err := readFiles(bytes.NewReader(raw), l)
	if err != nil {
		return nil, nil, err
	}
	byPath := make(map[string]workspace.File, len(input)+len(written))
	for _, f := range input {
		byPath[f.Path] = f
	}
	for _, f := range written {
		byPath[f.Path] = f
	}
	files := make([]workspace.File, 0, len(listed))
	seen := make(map[string]bool, len(listed))
	keep := func(p string) {
		if f, ok := byPath[p]; ok && !seen[p] {
			seen[p] = true
			files = append(files, f)
		}
	}
	for _, p := range listed {
		keep(p)
	}
	for _, f := range written {
		keep(f.Path)
	}
	workspace.Sort(files)
	if err := l.Check(files); err != nil {
		return nil, nil, err
	}
	slices.Sort(unwritable) // find lists in directory order, which varies
	return files, unwritable, nil
}

// readFiles reads a tar that untrusted code made: only regular files (and
// hard links to files read before) become workspace files; symbolic links,
// devices, pipes and directories are left out, never followed, as are
// paths CleanPath refuses (version-control metadata). It fails when a file
// or their sum goes over l.
func readFiles(r io.Reader, l workspace.Limits) ([]workspace.File, error) {
	tr := tar.NewReader(r)
	files := []workspace.File{}
	byPath := map[string]int{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read workdir archive: %w", err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		p, err := workspace.CleanPath(name)
		if err != nil || p != name {
			continue
		}
		var f workspace.File
		switch h.Typeflag {
		case tar.TypeReg:
			if l.MaxFileBytes > 0 && h.Size > l.MaxFileBytes {
				return nil, fmt.Errorf("%w: file %q is %d bytes, more than the limit of %d", workspace.ErrTooLarge, p, h.Size, l.MaxFileBytes)
			}
			data, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return nil, fmt.Errorf("read workdir archive: %s: %w", p, err)
			}
			f = workspace.File{Path: p, Mode: fileMode(h.Mode), Data: data}
		case tar.TypeLink:
			i, ok := byPath[strings.TrimPrefix(h.Linkname, "./")]
			if !ok {
				continue
			}
			f = workspace.File{Path: p, Mode: files[i].Mode, Data: files[i].Data}
		default:
			continue
		}
		if _, dup := byPath[p]; dup {
			continue
		}
		total += int64(len(f.Data))
		if l.MaxTotalBytes > 0 && total > l.MaxTotalBytes {
			return nil, fmt.Errorf("%w: the workdir holds more than %d bytes", workspace.ErrTooLarge, l.MaxTotalBytes)
		}
		byPath[p] = len(files)
		files = append(files, f)
	}
	return files, nil
}

// fileMode keeps what a workspace keeps of a mode: executable or not.
func fileMode(m int64) uint32 {
	if m&0o111 != 0 {
		return 0o755
	}
	return 0
}
