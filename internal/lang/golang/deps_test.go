package golang

import (
	"slices"
	"strings"
	"testing"
)

// TestRequiresModules: what the install is for is a require of go.mod,
// on its own line or in a block; comments, an empty block and the other
// directives require nothing, and a vendored project has its modules.
func TestRequiresModules(t *testing.T) {
	for _, tc := range []struct {
		gomod string
		want  bool
	}{
		{"module m\n\ngo 1.21\n", false},
		{"module m\n\ngo 1.21\n\nrequire golang.org/x/text v0.21.0\n", true},
		{"module m\nrequire (\n\tgolang.org/x/text v0.21.0 // indirect\n)\n", true},
		{"module m\nrequire(\n\n// none yet\n)\n", false},
		{"module m\nrequire ()\n", false},
		{"module m\n// require golang.org/x/text v0.21.0\n", false},
		{"module m\nreplace golang.org/x/text => ../text\nexclude golang.org/x/text v0.1.0\n", false},
		{"module m\nreplace (\n\tgolang.org/x/text v0.1.0 => ../text\n)\nrequire golang.org/x/text v0.1.0\n", false},
		{"module m\nreplace golang.org/x/text => ./text\nrequire (\n\tgolang.org/x/text v0.1.0\n\texample.com/lib v1.0.0\n)\n", true},
		{"module m\nreplace golang.org/x/text => example.com/text v0.2.0\nrequire golang.org/x/text v0.1.0\n", true},
	} {
		if got := requiresModules(map[string][]byte{"go.mod": []byte(tc.gomod)}); got != tc.want {
			t.Errorf("requiresModules(%q) = %v, want %v", tc.gomod, got, tc.want)
		}
	}
	vendor := map[string][]byte{"go.mod": []byte("module m\nrequire golang.org/x/text v0.21.0\n"), vendored: []byte("# golang.org/x/text v0.21.0\n")}
	if requiresModules(vendor) {
		t.Error("a vendored project needs an install")
	}
}

// TestProxyList: an install fetches from the configured module proxies,
// never directly from a version control host; a GOPROXY with nothing
// else is an error that says what to set.
func TestProxyList(t *testing.T) {
	goDefault := strings.TrimSuffix(defaultProxy, ",direct")
	for _, tc := range []struct {
		index, value string
		urls         []string
	}{
		{"", goDefault, []string{goDefault}},
		{"https://a.example/go|https://b.example,direct", "https://a.example/go,https://b.example", []string{"https://a.example/go", "https://b.example"}},
		{"http://127.0.0.1:3000,off", "http://127.0.0.1:3000", []string{"http://127.0.0.1:3000"}},
	} {
		value, urls, err := proxyList(tc.index)
		if err != nil || value != tc.value || !slices.Equal(urls, tc.urls) {
			t.Errorf("proxyList(%q) = %q, %q, %v; want %q, %q", tc.index, value, urls, err, tc.value, tc.urls)
		}
	}
	for _, index := range []string{"direct", "off", "file:///srv/mods,direct"} {
		if _, _, err := proxyList(index); err == nil {
			t.Errorf("proxyList(%q): no error", index)
		}
	}
}

// TestLocalModules: an install reads the go.mod of each module a replace
// directive or go.work's use directive names by a directory inside the
// project, and no other file.
func TestLocalModules(t *testing.T) {
	got := localModules(map[string][]byte{
		"go.mod":  []byte("module m\nreplace (\n\texample.com/a => ./a\n\texample.com/b v1.0.0 => ../outside\n\texample.com/c => example.com/d v1.0.0\n)\nreplace example.com/e => ./lib/e // local\n"),
		"go.work": []byte("go 1.22\n\nuse (\n\t.\n\t./tools\n)\nuse ./a\n"),
	})
	want := []string{"a/go.mod", "lib/e/go.mod", "tools/go.mod"}
	if !slices.Equal(got, want) {
		t.Errorf("localModules = %q, want %q", got, want)
	}
}
