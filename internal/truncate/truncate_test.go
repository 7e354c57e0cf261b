package truncate

import (
	"testing"
	"unicode/utf8"
)

func TestHeadAndTail(t *testing.T) {
	tests := []struct {
		in         string
		n          int
		head, tail string
	}{
		{"hello", 10, "hello", "hello"},
		{"hello", 5, "hello", "hello"},
		{"hello", 3, "hel", "llo"},
		{"hello", 0, "", ""},
		{"hello", -1, "", ""},
		{"", 3, "", ""},
		{"héllo", 2, "h", "lo"},         // é is 2 bytes: never split
		{"héllo", 3, "hé", "llo"},       //
		{"日本語", 4, "日", "語"},            // 3-byte runes
		{"日本語", 2, "", ""},              // no whole rune fits
		{"a\xffb", 2, "a\xff", "\xffb"}, // invalid bytes count as runes
	}
	for _, tt := range tests {
		if got := Head(tt.in, tt.n); got != tt.head {
			t.Errorf("Head(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.head)
		}
		if got := Tail(tt.in, tt.n); got != tt.tail {
			t.Errorf("Tail(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.tail)
		}
	}
}

func TestNeverSplitsARune(t *testing.T) {
	s := "aé日😀b"
	for n := 0; n <= len(s); n++ {
		h, tl := Head(s, n), Tail(s, n)
		if !utf8.ValidString(h) || !utf8.ValidString(tl) || len(h) > n || len(tl) > n {
			t.Errorf("n=%d: Head %q, Tail %q", n, h, tl)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{{"hello", 5, "hello"}, {"hello", 3, "hel…"}, {"héllo", 2, "h…"}} {
		if got := Quote(tt.in, tt.n); got != tt.want {
			t.Errorf("Quote(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
