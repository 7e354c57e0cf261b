// Package termsafe makes text from a model or a sandbox safe to print on a
// terminal: every control character, and so every escape sequence, is shown
// as a visible escape instead of reaching the terminal.
//
// A terminal acts on a sequence only when it sees its introducer (ESC, a C1
// control or BEL, which ends an OSC string); once those are visible, what
// follows them is plain text. Bidi overrides and isolates are shown too, so
// text cannot appear in an order other than the one it has.
package termsafe

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/autocoder/autocoder/internal/truncate"
)

// Text keeps newlines and tabs, so multi-line output keeps its shape; a CR
// ending a line is dropped and every other control is made visible.
func Text(s string) string { return clean(s, false) }

// Line is Text for a single line: newlines and tabs become spaces, so the
// text can neither add lines nor break a table's columns.
func Line(s string) string { return clean(s, true) }

// Clip makes s one safe line, its runs of spaces joined, of at most n
// bytes plus a mark where it was cut.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(Line(s)), " ")
	if head := truncate.Head(s, n); len(head) < len(s) {
		return head + "…"
	}
	return s
}

func clean(s string, oneLine bool) string {
	if isSafe(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			// An invalid byte: some terminals read 0x80-0x9f as C1 controls.
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			if oneLine {
				b.WriteByte(' ')
			} else {
				b.WriteRune(r)
			}
		case r == '\r' && strings.HasPrefix(s[i+1:], "\n"):
			// CRLF line ends are ordinary; only a lone CR rewrites a line.
		case needsEscape(r):
			writeEscape(&b, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isSafe is the fast path: most text has nothing to change.
func isSafe(s string, oneLine bool) bool {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			if oneLine {
				return false
			}
		case r == utf8.RuneError, needsEscape(r): // RuneError may be an invalid byte
			return false
		}
	}
	return true
}

func needsEscape(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	}
	return false
}

func writeEscape(b *strings.Builder, r rune) {
	switch {
	case r == '\r':
		b.WriteString(`\r`)
	case r == '\b':
		b.WriteString(`\b`)
	case r < 0x80:
		fmt.Fprintf(b, `\x%02x`, r)
	default:
		fmt.Fprintf(b, `\u%04x`, r)
	}
}

// JSON escapes, inside encoded JSON, the characters a terminal acts on that
// encoding/json leaves raw (DEL, C1 controls, bidi controls), so JSON
// printed on a terminal is safe too. They can occur only inside strings,
// and the escapes decode to the same text.
func JSON(encoded []byte) []byte {
	if !bytes.ContainsFunc(encoded, rawInJSON) {
		return encoded
	}
	var b bytes.Buffer
	b.Grow(len(encoded) + 16)
	for len(encoded) > 0 {
		r, size := utf8.DecodeRune(encoded)
		if rawInJSON(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.Write(encoded[:size])
		}
		encoded = encoded[size:]
	}
	return b.Bytes()
}

// rawInJSON reports the characters a terminal acts on that encoding/json
// does not escape; it escapes every other control.
func rawInJSON(r rune) bool { return r == 0x7f || r >= 0x80 && needsEscape(r) }
