package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestElide(t *testing.T) {
	lines := strings.Repeat("0123456789abcdef\n", 100) // 1700 bytes
	tests := []struct {
		name string
		text string
		max  int
		has  []string
	}{
		{"short text unchanged", "abc", 10, []string{"abc"}},
		{"head and tail on line boundaries", lines, 400, []string{"0123456789abcdef\n\n[… ", " bytes elided …]\n0123456789abcdef\n"}},
		{"one long line", strings.Repeat("x", 1000) + "END", 200, []string{"xxx\n[… ", "END"}},
		{"no room for a marker", strings.Repeat("y", 100), 10, []string{"yyyyyyyyyy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Elide(tt.text, tt.max)
			if len(got) > tt.max {
				t.Errorf("%d bytes, over %d", len(got), tt.max)
			}
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("lacks %q:\n%s", s, got)
				}
			}
		})
	}
}

func FuzzElide(f *testing.F) {
	f.Add("héllo wörld\nline two\nthree", 20)
	f.Add(strings.Repeat("日本語\n", 50), 64)
	f.Fuzz(func(t *testing.T, text string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := Elide(text, max)
		if len(text) <= max {
			if got != text {
				t.Fatalf("short text changed")
			}
			return
		}
		if len(got) > max {
			t.Fatalf("Elide(%d bytes, %d) = %d bytes", len(text), max, len(got))
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("cut inside a UTF-8 sequence: %q", got)
		}
	})
}
