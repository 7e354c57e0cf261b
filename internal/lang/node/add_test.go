package node

import (
	"slices"
	"strings"
	"testing"
)

// TestNpmAddTakesRegistryPackagesOnly: the install tool runs npm install
// with packages of the registry, scoped or not, saved as the tests' own
// with dev; an option, a URL, a path, a git or alias spec is refused,
// with why.
func TestNpmAddTakesRegistryPackagesOnly(t *testing.T) {
	cmd, err := npmAdd([]string{"left-pad@1.3.0", "@types/node@^18", "lodash"}, true)
	if err != nil || !slices.Equal(cmd[4:], []string{"--save-dev", "left-pad@1.3.0", "@types/node@^18", "lodash"}) {
		t.Errorf("packages: %q, %v", cmd, err)
	}
	if cmd, _ := npmAdd([]string{"greet@1.2.0"}, false); cmd[4] != "--save-prod" {
		t.Errorf("not dev: %q", cmd)
	}
	for _, c := range []struct{ spec, want string }{
		{"--registry=https://evil.example/", "is an option"},
		{"-g", "is an option"},
		{"https://evil.example/pkg.tgz", "not a package"},
		{"git+https://github.com/a/b.git", "not a package"},
		{"github:a/b", "not a package"},
		{"a/b", "not a package"},
		{"file:../pkg", "not a package"},
		{"./pkg", "not a package"},
		{"alias@npm:left-pad@1.3.0", "not a package"},
		{"left-pad@1.3.0;id", "not a package"},
	} {
		if _, err := npmAdd([]string{c.spec}, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
}
