package modelout

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/workspace"
)

var (
	// ErrSearchNotFound reports SEARCH lines absent from the file.
	ErrSearchNotFound = errors.New("SEARCH lines not found")
	// ErrSearchAmbiguous reports SEARCH lines found more than once.
	ErrSearchAmbiguous = errors.New("SEARCH lines match more than one place")
	// ErrMissingFile reports an edit or deletion of a file that does not exist.
	ErrMissingFile = errors.New("file does not exist")
	// ErrFileTooLarge reports a file over workspace.DefaultLimits.MaxFileBytes.
	ErrFileTooLarge = errors.New("file too large")
)

// Apply performs out on files and returns the new file set, sorted by path,
// with the sorted paths whose content changed. The input is not modified.
// Deletions go first, then whole-file blocks, then edits, each in order;
// the first failure aborts and is returned.
func Apply(files []workspace.File, out Output) ([]workspace.File, []string, error) {
	byPath := workspace.ByPath(files)
	changed := map[string]bool{}
	for _, p := range out.Deletes {
		c, err := checkPath(p)
		if err != nil {
			return nil, nil, fmt.Errorf("delete: %w", err)
		}
		if _, ok := byPath[c]; !ok {
			return nil, nil, fmt.Errorf("delete %s: %w", c, ErrMissingFile)
		}
		delete(byPath, c)
		changed[c] = true
	}
	for _, b := range out.Blocks {
		c, err := checkPath(b.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("write: %w", err)
		}
		if err := write(byPath, changed, c, b.Content); err != nil {
			return nil, nil, err
		}
	}
	for _, e := range out.Edits {
		c, err := checkPath(e.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("edit: %w", err)
		}
		f, ok := byPath[c]
		if !ok {
			return nil, nil, fmt.Errorf("edit %s: %w; send the whole file in a block instead", c, ErrMissingFile)
		}
		content, err := applyEdit(string(f.Data), e)
		if err != nil {
			return nil, nil, fmt.Errorf("edit %s: %w", c, err)
		}
		if err := write(byPath, changed, c, content); err != nil {
			return nil, nil, err
		}
	}

	result := make([]workspace.File, 0, len(byPath))
	for _, f := range byPath {
		result = append(result, f)
	}
	workspace.Sort(result)
	if err := workspace.DefaultLimits.Check(result); err != nil {
		return nil, nil, fmt.Errorf("apply: %w", err)
	}
	paths := make([]string, 0, len(changed))
	for p := range changed {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return result, paths, nil
}

// write stores content at path, keeping an existing file's mode.
func write(byPath map[string]workspace.File, changed map[string]bool, path, content string) error {
	if limit := workspace.DefaultLimits.MaxFileBytes; int64(len(content)) > limit {
		return fmt.Errorf("%s: %w: %d bytes, over the limit of %d", path, ErrFileTooLarge, len(content), limit)
	}
	f, ok := byPath[path]
	if ok && bytes.Equal(f.Data, []byte(content)) {
		return nil
	}
	byPath[path] = workspace.File{Path: path, Mode: f.Mode, Data: []byte(content)}
	changed[path] = true
	return nil
}

// applyEdit replaces the one run of whole lines equal to e.Search. Lines
// compare without their line ending, so a CRLF file takes LF edits; the
// replacement takes the endings of the lines it replaces.
func applyEdit(content string, e Edit) (string, error) {
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	search := editLines(e.Search)
	if len(search) == 0 {
		return "", fmt.Errorf("%w: SEARCH section is empty", ErrMalformedEdit)
	}
	at := matches(lines, search, func(a, b string) bool { return a == b })
	switch {
	case len(at) > 1:
		return "", fmt.Errorf("%w (%d places, first SEARCH line %q); add surrounding lines to make it unique",
			ErrSearchAmbiguous, len(at), search[0])
	case len(at) == 0:
		hint := ""
		if len(matches(lines, search, func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) })) > 0 {
			hint = "; they match only if whitespace is ignored: copy indentation exactly"
		}
		return "", fmt.Errorf("%w (first SEARCH line %q)%s", ErrSearchNotFound, search[0], hint)
	}
	i := at[0]
	lastEOL := lineEnding(lines[i+len(search)-1])
	eol := "\n"
	for _, l := range lines[max(i-1, 0) : i+len(search)] {
		if e := lineEnding(l); e != "" {
			eol = e
			break
		}
	}
	var b strings.Builder
	for _, l := range lines[:i] {
		b.WriteString(l)
	}
	repl := editLines(e.Replace)
	for k, l := range repl {
		b.WriteString(l)
		if k == len(repl)-1 {
			b.WriteString(lastEOL)
		} else {
			b.WriteString(eol)
		}
	}
	for _, l := range lines[i+len(search):] {
		b.WriteString(l)
	}
	return b.String(), nil
}

// editLines splits an Edit's text into lines without endings.
func editLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func lineEnding(line string) string {
	switch {
	case strings.HasSuffix(line, "\r\n"):
		return "\r\n"
	case strings.HasSuffix(line, "\n"):
		return "\n"
	}
	return ""
}

// matches returns every index where search starts in lines.
func matches(lines, search []string, eq func(a, b string) bool) []int {
	var at []int
	for i := 0; i+len(search) <= len(lines); i++ {
		ok := true
		for k, s := range search {
			l := lines[i+k]
			if !eq(strings.TrimSuffix(l, lineEnding(l)), s) {
				ok = false
				break
			}
		}
		if ok {
			at = append(at, i)
		}
	}
	return at
}
