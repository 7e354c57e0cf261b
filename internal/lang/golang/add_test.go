package golang

import (
	"slices"
	"strings"
	"testing"
)

// TestGoGetTakesModulesOnly: the install tool runs go get with module
// paths of a registry and their versions; an option, a package directory
// of the project, a path or a URL is refused, with why.
func TestGoGetTakesModulesOnly(t *testing.T) {
	cmd, err := goGet([]string{"golang.org/x/text@v0.21.0", "github.com/google/uuid", "example.com/m/v2@latest"}, true)
	if err != nil || !slices.Equal(cmd, []string{"go", "get", "golang.org/x/text@v0.21.0", "github.com/google/uuid", "example.com/m/v2@latest"}) {
		t.Errorf("modules: %q, %v", cmd, err)
	}
	for _, c := range []struct{ spec, want string }{
		{"-modfile=other.mod", "is an option"},
		{"-u", "is an option"},
		{"./...", "not a package"},
		{".", "not a package"},
		{"../other", "not a package"},
		{"/abs/path", "not a package"},
		{"https://proxy.example/golang.org/x/text", "not a package"},
		{"uuid", "not a package"},
		{"golang.org/x/text@v0.21.0 -x", "not a package"},
		{"golang.org/x/text@$(id)", "not a package"},
	} {
		if _, err := goGet([]string{c.spec}, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.spec, err, c.want)
		}
	}
}
