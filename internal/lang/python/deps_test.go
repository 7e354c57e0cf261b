package python

import "testing"

// TestDeclaresRequirements: only a requirements.txt that names a package
// asks for an install.
func TestDeclaresRequirements(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"", false},
		{"# nothing yet\n\n   \n", false},
		{"requests==2.32.3\n", true},
		{"  # pinned\nattrs>=23\n", true},
	} {
		if got := declaresRequirements(map[string][]byte{"requirements.txt": []byte(c.text)}); got != c.want {
			t.Errorf("%q: %v, want %v", c.text, got, c.want)
		}
	}
}
