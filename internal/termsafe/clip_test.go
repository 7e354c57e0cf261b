package termsafe

import "testing"

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  many   spaces\nand\tlines ", 100, "many spaces and lines"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // never half a rune
		{"a\x1b[2Kb", 100, `a\x1b[2Kb`},
	}
	for _, tt := range tests {
		if got := Clip(tt.in, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
