package sandbox

import (
	"bytes"
	"io"
	"strconv"
)

// endMarker, a space and the run's end token start the line the entry
// script writes last to each stream of a docker sandbox, once everything
// the command started is dead: on stdout with the command's exit status
// and the count of the container's processes killed for its memory limit
// ("-" where the cgroup does not say), on stderr alone. With both lines
// read the run is over, and the host need not wait for the daemon to take
// the container down (tens to hundreds of milliseconds per run) to learn
// its result.
const endMarker = "autocoder-sandbox: end"

// endLines spots the end lines of a run's two streams, each at the very
// end of its stream, holding back the bytes that may be one so that the
// output passes on without them. One goroutine writes both streams (the
// demultiplexer of the container's output).
type endLines struct {
	stdout, stderr *endLine
	seen           int
	done           chan struct{} // closed once both lines are read
}

func newEndLines(token string, stdout, stderr io.Writer) *endLines {
	e := &endLines{done: make(chan struct{})}
	prefix := "\n" + endMarker + " " + token
	e.stdout = &endLine{w: stdout, prefix: []byte(prefix + " "), fields: 2, seen: e.see}
	e.stderr = &endLine{w: stderr, prefix: []byte(prefix), seen: e.see}
	return e
}

func (e *endLines) see() {
	if e.seen++; e.seen == 2 {
		close(e.done)
	}
}

// status is the command's exit status when both lines were read and the
// cgroup counted no process killed for memory; otherwise ok is false and
// only the daemon can tell how the run ended.
func (e *endLines) status() (code int, ok bool) {
	select {
	case <-e.done:
	default:
		return 0, false
	}
	f := bytes.Fields(e.stdout.rest)
	if len(f) != 2 || string(f[1]) != "0" {
		return 0, false
	}
	code, err := strconv.Atoi(string(f[0]))
	if err != nil || code < 0 || code > 255 {
		return 0, false
	}
	return code, true
}

// flush passes on what is held back of streams that ended without their
// end line.
func (e *endLines) flush() {
	e.stdout.flush()
	e.stderr.flush()
}

// endLine is one stream's watch for its end line: prefix, then fields
// space-separated words of digits or "-", then a newline.
type endLine struct {
	w      io.Writer
	prefix []byte
	fields int
	seen   func()
	held   []byte
	found  bool
	rest   []byte // the words after the prefix, once found
}

// maxEndWords bounds the bytes of an end line's words, with their spaces
// and newline: an exit status and a count.
const maxEndWords = 32

func (l *endLine) Write(p []byte) (int, error) {
	if l.found {
		// Nothing comes after the end line; whatever does is not output.
		return len(p), nil
	}
	l.held = append(l.held, p...)
	if i := bytes.LastIndex(l.held, l.prefix); i >= 0 && l.isEnd(l.held[i+len(l.prefix):]) {
		l.found = true
		l.rest = bytes.Clone(l.held[i+len(l.prefix):])
		_, err := l.w.Write(l.held[:i])
		l.held = nil
		l.seen()
		return len(p), err
	}
	keep := len(l.prefix) + maxEndWords
	if len(l.held) <= keep {
		return len(p), nil
	}
	_, err := l.w.Write(l.held[:len(l.held)-keep])
	l.held = append(l.held[:0], l.held[len(l.held)-keep:]...)
	return len(p), err
}

// isEnd reports whether b is the rest of an end line, up to its newline
// and nothing after it.
func (l *endLine) isEnd(b []byte) bool {
	line, ok := bytes.CutSuffix(b, []byte("\n"))
	if !ok || bytes.IndexByte(line, '\n') >= 0 {
		return false
	}
	words := bytes.Fields(line)
	if len(words) != l.fields || (l.fields == 0 && len(line) != 0) {
		return false
	}
	for _, w := range words {
		if string(w) == "-" {
			continue
		}
		if _, err := strconv.ParseUint(string(w), 10, 63); err != nil {
			return false
		}
	}
	return true
}

func (l *endLine) flush() {
	if !l.found && len(l.held) > 0 {
		_, _ = l.w.Write(l.held)
		l.held = nil
	}
}
