package signature

import (
	"regexp"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/truncate"
)

// Signature is the stable identity of a failure: what kind of error it is,
// its message with the volatile parts abstracted away, and the key lines a
// full-text or trigram index searches.
type Signature struct {
	Kind  string // error class, e.g. "python:KeyError", "go:compile:undefined", "timeout"
	Shape string // the main message with placeholders: <path> <n> <id> <str> <addr> <dur>
	Text  string // normalized key lines, deduplicated, at most MaxText bytes
}

// Key is the exact-match identity of the signature, suitable for hashing.
func (s Signature) Key() string { return s.Kind + "|" + s.Shape }

// Kinds that do not belong to one language.
const (
	KindTimeout = "timeout"
	KindOOM     = "oom"
	KindUnknown = "unknown"
)

// Bounds on what Normalize returns, so signatures fit in an index row.
const (
	MaxKind  = 64
	MaxShape = 240
	MaxText  = 600
	maxLine  = 200
	maxKeys  = 8
	// Only this many candidate key lines are examined, so a log repeating
	// one error thousands of times costs no more than a short one.
	maxCandidates = 64
	// Longer lines are cut before parsing; no diagnostic needs more.
	maxRawLine = 2048
	// Outputs beyond maxInput keep their head and tail: errors sit at the
	// start (compilers) or the end (tracebacks, executor markers).
	maxInput = 1 << 20
)

// Normalize turns raw tool output into a signature, read by the
// language's failure parser; a language without one, or output it does not
// understand, gets the generic reading.
func Normalize(l lang.Language, output string) Signature {
	lines := splitLines(clip(output))
	var f lang.Finding
	if l.Failure.Parse != nil {
		f = l.Failure.Parse(lines)
	}
	if f.Kind == "" {
		f = parseGeneric(lines, l.Name)
	}
	if k, marker, ok := executorMarker(lines); ok {
		f = lang.Finding{Kind: k, Shape: normLine(marker), Keys: append([]string{marker}, f.Keys...)}
	}
	return Signature{
		Kind:  truncate.Head(f.Kind, MaxKind),
		Shape: truncate.Head(f.Shape, MaxShape),
		Text:  keyText(f.Keys),
	}
}

func clip(s string) string {
	if len(s) <= maxInput {
		return s
	}
	return s[:maxInput/2] + "\n" + s[len(s)-maxInput/2:]
}

var ansiRe = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// splitLines cleans the output into lines of valid UTF-8 without NULs or
// terminal escapes, which databases and similarity measures choke on.
func splitLines(s string) []string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	if strings.Contains(s, "\x1b") {
		s = ansiRe.ReplaceAllString(s, "")
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = truncate.Head(strings.TrimRight(l, "\r"), maxRawLine)
	}
	return lines
}

const (
	timeoutMarker = "[killed: wall-clock timeout"
	// oomMarker is the one runs are summarized with; oldOOMMarker the one
	// stored before runs named the limit.
	oomMarker    = "[killed: memory limit"
	oldOOMMarker = "[killed: out of memory"
)

// executorMarker finds the line the executor appends when it killed the
// run; the kill, not whatever was printed before it, is the failure.
func executorMarker(lines []string) (kind, line string, ok bool) {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(l, timeoutMarker):
			return KindTimeout, l, true
		case strings.HasPrefix(l, oomMarker), strings.HasPrefix(l, oldOOMMarker):
			return KindOOM, l, true
		}
	}
	return "", "", false
}

var genericErrRe = regexp.MustCompile(`(?i)\b(error|exception|panic|fatal|failed|failure|traceback)\b`)

// mentionsError screens with a cheap substring test before the regexp.
func mentionsError(l string) bool {
	lower := strings.ToLower(l)
	for _, w := range []string{"error", "exception", "panic", "fatal", "fail", "traceback"} {
		if strings.Contains(lower, w) {
			return genericErrRe.MatchString(l)
		}
	}
	return false
}

// parseGeneric is the fallback: the first lines that mention an error, or
// the last lines of the output when none does.
func parseGeneric(lines []string, name string) lang.Finding {
	kind := KindUnknown
	if name != "" {
		kind = name + ":error"
	}
	var keys []string
	for _, l := range lines {
		if mentionsError(l) {
			keys = append(keys, l)
			if len(keys) == 3 {
				break
			}
		}
	}
	if len(keys) == 0 {
		for i := len(lines) - 1; i >= 0 && len(keys) < 3; i-- {
			if strings.TrimSpace(lines[i]) != "" {
				keys = append([]string{lines[i]}, keys...)
			}
		}
		if len(keys) == 0 {
			return lang.Finding{Kind: KindUnknown}
		}
		if name != "" {
			kind = name + ":unknown"
		}
		// Without an error line, the last line is the run's own verdict.
		return lang.Finding{Kind: kind, Shape: normLine(keys[len(keys)-1]), Keys: keys}
	}
	return lang.Finding{Kind: kind, Shape: normLine(keys[0]), Keys: keys}
}

// keyText normalizes and deduplicates the key lines and joins as many as
// fit in MaxText bytes.
func keyText(keys []string) string {
	var b strings.Builder
	seen := map[string]bool{}
	n := 0
	for _, k := range keys[:min(len(keys), maxCandidates)] {
		l := normLine(k)
		if l == "" || seen[l] {
			continue
		}
		seen[l] = true
		extra := len(l)
		if b.Len() > 0 {
			extra++
		}
		if b.Len()+extra > MaxText || n == maxKeys {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
		n++
	}
	return b.String()
}
