package words

import "testing"

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"one word", "go", 1},
		{"empty", "", 0},
		{"double space", "a  b", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Count(tt.in); got != tt.want {
				t.Errorf("Count(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}
