package tools

import "testing"

// TestMatchPath: the whole path must match; "**" spans any number of
// segments, none included; a matched directory does not cover its tree.
func TestMatchPath(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"packages/*/package.json", "packages/a/package.json", true},
		{"packages/*/package.json", "packages/a/b/package.json", false},
		{"packages/**/package.json", "packages/package.json", true},
		{"packages/**/package.json", "packages/a/b/package.json", true},
		{"packages/*", "packages/a/package.json", false},
		{"crates/*/Cargo.toml", "tools/x/Cargo.toml", false},
	} {
		if got := MatchPath(c.pattern, c.path); got != c.want {
			t.Errorf("MatchPath(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}
