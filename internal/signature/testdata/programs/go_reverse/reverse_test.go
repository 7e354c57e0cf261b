package reverse

import "testing"

func TestString(t *testing.T) {
	if got, want := String("abcd"), "dcba"; got != want {
		t.Errorf("String(%q) = %q, want %q", "abcd", got, want)
	}
}
