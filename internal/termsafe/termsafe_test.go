package termsafe

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestTextAndLine(t *testing.T) {
	tests := []struct {
		name, in, text, line string
	}{
		{"plain", "tests passed", "tests passed", "tests passed"},
		{"unicode", "✓ café 日本", "✓ café 日本", "✓ café 日本"},
		{"multi-line output", "FAIL\n\tgot 1\nwant 2\n", "FAIL\n\tgot 1\nwant 2\n", "FAIL  got 1 want 2 "},
		{"CRLF line ends", "a\r\nb\r\n", "a\nb\n", "a b "},
		{"lone CR rewrites the line", "ok\rFAIL", `ok\rFAIL`, `ok\rFAIL`},
		{"erase line", "\x1b[2Kdone", `\x1b[2Kdone`, `\x1b[2Kdone`},
		{"colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"OSC 52 clipboard", "\x1b]52;c;Y3VybCB4fHNo\x07", `\x1b]52;c;Y3VybCB4fHNo\x07`, `\x1b]52;c;Y3VybCB4fHNo\x07`},
		{"OSC with ST", "\x1b]0;title\x1b\\", `\x1b]0;title\x1b\`, `\x1b]0;title\x1b\`},
		{"DCS", "\x1bP1$r\x1b\\", `\x1bP1$r\x1b\`, `\x1bP1$r\x1b\`},
		{"lone ESC", "a\x1bb", `a\x1bb`, `a\x1bb`},
		{"C1 CSI as a rune", "\u009b2J", `\u009b2J`, `\u009b2J`},
		{"C1 OSC and ST as runes", "\u009d52;c;eA==\u009c", `\u009d52;c;eA==\u009c`, `\u009d52;c;eA==\u009c`},
		{"C1 as a raw byte", "a\x9b2Jb", `a\x9b2Jb`, `a\x9b2Jb`},
		{"invalid UTF-8", "a\xffb", `a\xffb`, `a\xffb`},
		{"backspaces", "pass\b\b\b\bFAIL", `pass\b\b\b\bFAIL`, `pass\b\b\b\bFAIL`},
		{"bell, NUL and DEL", "a\x07b\x00c\x7f", `a\x07b\x00c\x7f`, `a\x07b\x00c\x7f`},
		{"bidi override", "x\u202eevil\u202c", `x\u202eevil\u202c`, `x\u202eevil\u202c`},
		{"bidi isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`, `\u2066a\u2067b\u2068c\u2069`},
		{"bidi embedding", "\u202a\u202b", `\u202a\u202b`, `\u202a\u202b`},
		{"U+FFFD itself is kept", "a\uFFFDb", "a\uFFFDb", "a\uFFFDb"},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
		})
	}
}

// TestNothingReachesTheTerminal checks every single code point a terminal
// could act on: none survives Text or Line.
func TestNothingReachesTheTerminal(t *testing.T) {
	var dangerous []rune
	for r := rune(0); r < 0xa0; r++ {
		if r >= 0x20 && r < 0x7f || r == '\n' || r == '\t' {
			continue
		}
		dangerous = append(dangerous, r)
	}
	dangerous = append(dangerous, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069)
	for _, r := range dangerous {
		in := "a" + string(r) + "b"
		for name, out := range map[string]string{"Text": Text(in), "Line": Line(in)} {
			if strings.ContainsRune(out, r) {
				t.Errorf("%s(%q) = %q still holds U+%04X", name, in, out, r)
			}
		}
	}
	if strings.ContainsAny(Line("a\nb\tc"), "\n\t") {
		t.Error("Line keeps a newline or tab")
	}
}

func TestJSON(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0xa0; r++ {
		all.WriteRune(r)
	}
	all.WriteString("\u202a\u202e\u2066\u2069 é 日 \uFFFD")
	in := map[string]string{"text": all.String()}
	encoded, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	out := JSON(encoded)
	for _, r := range string(out) {
		if r != '\n' && needsEscape(r) {
			t.Errorf("JSON output holds U+%04X", r)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("escaped JSON does not decode: %v\n%s", err, out)
	}
	if back["text"] != in["text"] {
		t.Errorf("text changed:\n got %q\nwant %q", back["text"], in["text"])
	}
	if plain := []byte(`{"a": "b"}`); !bytes.Equal(JSON(plain), plain) {
		t.Errorf("JSON(%s) = %s", plain, JSON(plain))
	}
}
