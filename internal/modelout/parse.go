package modelout

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/autocoder/autocoder/internal/workspace"
)

// Block is the whole new content of one file.
type Block struct {
	Path    string
	Content string
}

// Edit replaces the lines Search with the lines Replace in one file. Both
// hold whole lines, each ending in "\n"; an empty Replace deletes.
type Edit struct {
	Path    string
	Search  string
	Replace string
}

// Output is what a model's answer asks to do to the workspace, in the
// order it was written. Apply performs deletions, then blocks, then edits.
type Output struct {
	Blocks  []Block
	Edits   []Edit
	Deletes []string
}

var (
	// ErrNoCode reports an answer without any fenced code block.
	ErrNoCode = errors.New("no code blocks found: put each file in a fenced block tagged with its path, e.g. ```python path=app/main.py")
	// ErrNoPath reports code blocks none of which names its file.
	ErrNoPath = errors.New("no code block names its file: tag each fence with its path, e.g. ```python path=app/main.py")
	// ErrUnclosed reports a file block that never ends, usually a cut-off answer.
	ErrUnclosed = errors.New("code block is not closed (was the answer cut off?)")
	// ErrMalformedEdit reports a broken SEARCH/REPLACE section.
	ErrMalformedEdit = errors.New("malformed SEARCH/REPLACE edit")
)

// Parse reads the files, edits and deletions in a model's answer.
func Parse(text string) (Output, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var out Output
	fences := 0
	for i := 0; i < len(lines); i++ {
		if p, ok := deleteDirective(lines[i]); ok {
			c, err := checkPath(p)
			if err != nil {
				return Output{}, fmt.Errorf("DELETE: %w", err)
			}
			out.Deletes = append(out.Deletes, c)
			continue
		}
		marker, info, ok := openingFence(lines[i])
		if !ok {
			continue
		}
		fences++
		path, err := blockPath(info, lines, i)
		if err != nil {
			return Output{}, err
		}
		body, end, closed := fenceBody(lines, i+1, marker)
		if !closed {
			if path != "" {
				return Output{}, fmt.Errorf("%s: %w", path, ErrUnclosed)
			}
			break // the rest of the answer is inside an untagged block
		}
		i = end
		if path == "" {
			continue
		}
		if !hasEditMarker(body) {
			out.Blocks = append(out.Blocks, Block{Path: path, Content: joinLines(body)})
			continue
		}
		edits, err := parseEdits(path, body)
		if err != nil {
			return Output{}, err
		}
		out.Edits = append(out.Edits, edits...)
	}
	if len(out.Blocks)+len(out.Edits)+len(out.Deletes) == 0 {
		if fences == 0 {
			return Output{}, ErrNoCode
		}
		return Output{}, fmt.Errorf("%w (%d untagged blocks)", ErrNoPath, fences)
	}
	return out, nil
}

// openingFence recognises a line opening a fenced block: a run of at least
// three backticks or tildes, then an optional info string.
func openingFence(line string) (marker, info string, ok bool) {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return "", "", false
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 {
		return "", "", false
	}
	info = strings.TrimSpace(t[n:])
	if t[0] == '`' && strings.Contains(info, "`") {
		return "", "", false // inline code such as ```x```
	}
	return t[:n], info, true
}

// isClosingFence reports a line closing a block opened with marker: the
// same character, at least as many times, nothing else.
func isClosingFence(line, marker string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(marker) && strings.Trim(t, marker[:1]) == ""
}

// fenceBody collects the lines of a block from start to its closing fence.
// A nested fence opened with a language tag and a marker at least as long
// as ours is balanced against its own close, so a file that itself holds a
// fenced example is kept whole.
func fenceBody(lines []string, start int, marker string) (body []string, end int, closed bool) {
	depth := 0
	for j := start; j < len(lines); j++ {
		if isClosingFence(lines[j], marker) {
			if depth == 0 {
				return lines[start:j], j, true
			}
			depth--
			continue
		}
		if m, info, ok := openingFence(lines[j]); ok && info != "" && m[0] == marker[0] && len(m) >= len(marker) {
			depth++
		}
	}
	return nil, len(lines), false
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func deleteDirective(line string) (string, bool) {
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "DELETE" {
		return "", false
	}
	return strings.Trim(f[1], "`"), true
}

// checkPath validates a path named by the model.
func checkPath(p string) (string, error) {
	c, err := workspace.CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("rejected path: %w", err)
	}
	return c, nil
}

// blockPath finds the path of the block opened at lines[i]: from its info
// string, else from the line before it.
func blockPath(info string, lines []string, i int) (string, error) {
	p := pathFromInfo(info)
	if p == "" {
		j := i - 1
		if j >= 0 && strings.TrimSpace(lines[j]) == "" {
			j--
		}
		if j >= 0 {
			p = pathFromLine(lines[j])
		}
	}
	if p == "" {
		return "", nil
	}
	return checkPath(p)
}

// pathKeys name the path in an info string; title only when it looks like one.
var pathKeys = map[string]bool{"path": true, "file": true, "filename": true, "filepath": true}

func pathFromInfo(info string) string {
	fields := strings.Fields(info)
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		v = strings.Trim(v, `"'`)
		k = strings.ToLower(k)
		if ok && v != "" && (pathKeys[k] || ((k == "title" || k == "name") && looksLikePath(v))) {
			return v
		}
	}
	if len(fields) == 0 {
		return ""
	}
	// "python:app/main.py"
	if lang, p, ok := strings.Cut(fields[0], ":"); ok && lang != "" && looksLikePath(p) {
		return p
	}
	// "app/main.py" or "python app/main.py"
	for _, f := range fields[:min(2, len(fields))] {
		if looksLikePath(f) {
			return f
		}
	}
	return ""
}

// pathFromLine reads "File: x", "### x", "**x**" or "`x`:".
func pathFromLine(line string) string {
	s := trimDecor(strings.TrimLeft(strings.TrimSpace(line), "#> \t"))
	for _, prefix := range []string{"file path:", "filepath:", "filename:", "file:", "path:"} {
		if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
			s = trimDecor(s[len(prefix):])
			break
		}
	}
	if looksLikePath(s) {
		return s
	}
	return ""
}

// trimDecor strips spaces, emphasis, backticks and a trailing colon.
func trimDecor(s string) string {
	for {
		t := strings.TrimSpace(strings.TrimSuffix(strings.Trim(strings.TrimSpace(s), "*`"), ":"))
		if t == s {
			return s
		}
		s = t
	}
}

// bareNames are file names without an extension common enough to accept
// as a path on their own.
var bareNames = map[string]bool{
	"Makefile": true, "Dockerfile": true, "Containerfile": true, "Procfile": true,
	"Gemfile": true, "Rakefile": true, "Jenkinsfile": true, "Vagrantfile": true, "LICENSE": true,
}

// looksLikePath tells a file path from a language tag or a word: one token
// of path characters with a directory separator or an extension.
func looksLikePath(s string) bool {
	if bareNames[s] {
		return true
	}
	if s == "" || len(s) > 1024 {
		return false
	}
	alnum := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			alnum = true
		case unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("`*<>|\"',;!?=(){}:", r):
			return false
		}
	}
	if !alnum {
		return false
	}
	if strings.Contains(s, "/") {
		return true
	}
	dot := strings.LastIndexByte(s, '.')
	return dot >= 0 && dot < len(s)-1
}

func hasEditMarker(body []string) bool {
	for _, l := range body {
		if isMarker(l, '<', "SEARCH") {
			return true
		}
	}
	return false
}

// isMarker matches "<<<<<<< SEARCH" and ">>>>>>> REPLACE", tolerating 5 to
// 9 marker characters and the space.
func isMarker(line string, c byte, word string) bool {
	t := strings.TrimSpace(line)
	n := 0
	for n < len(t) && t[n] == c {
		n++
	}
	return n >= 5 && n <= 9 && strings.EqualFold(strings.TrimSpace(t[n:]), word)
}

func isDivider(line string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= 5 && len(t) <= 9 && strings.Trim(t, "=") == ""
}

func parseEdits(path string, body []string) ([]Edit, error) {
	const (
		between = iota
		inSearch
		inReplace
	)
	malformed := func(what string) error {
		return fmt.Errorf("edit %s: %w: %s", path, ErrMalformedEdit, what)
	}
	state := between
	var search, replace []string
	var edits []Edit
	for _, l := range body {
		switch state {
		case between: // text between sections is commentary
			if isMarker(l, '<', "SEARCH") {
				state, search, replace = inSearch, nil, nil
			}
		case inSearch:
			switch {
			case isDivider(l):
				state = inReplace
			case isMarker(l, '<', "SEARCH"), isMarker(l, '>', "REPLACE"):
				return nil, malformed("missing ======= between SEARCH and REPLACE")
			default:
				search = append(search, l)
			}
		case inReplace:
			switch {
			case isMarker(l, '>', "REPLACE"):
				if len(search) == 0 {
					return nil, malformed("SEARCH section is empty; send the whole file instead")
				}
				edits = append(edits, Edit{Path: path, Search: joinLines(search), Replace: joinLines(replace)})
				state = between
			case isMarker(l, '<', "SEARCH"):
				return nil, malformed("missing >>>>>>> REPLACE")
			default:
				replace = append(replace, l)
			}
		}
	}
	switch state {
	case inSearch:
		return nil, malformed("missing ======= between SEARCH and REPLACE")
	case inReplace:
		return nil, malformed("missing >>>>>>> REPLACE")
	}
	return edits, nil
}
