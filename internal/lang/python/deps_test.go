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

// TestTrustPlainHTTP: pip ignores an index over plain HTTP off the
// loopback unless its host is trusted; a configured one is, with its
// port, and one over HTTPS needs nothing.
func TestTrustPlainHTTP(t *testing.T) {
	for index, want := range map[string]string{
		"http://172.17.0.1:35211/simple/":      "172.17.0.1:35211",
		"http://user:pw@pypi.internal/simple/": "pypi.internal",
		"https://pypi.internal/simple/":        "",
		"not a url\x7f":                        "",
	} {
		got := trustPlainHTTP(index)["PIP_TRUSTED_HOST"]
		if got != want {
			t.Errorf("trustPlainHTTP(%q) = %q, want %q", index, got, want)
		}
	}
}
