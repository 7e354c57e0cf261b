package rust

import (
	"slices"
	"testing"
)

// TestDeclaresCrates: what the install is for is a crate of a registry
// (or git) in any dependency table of any of the project's Cargo.toml
// files; path dependencies are the project's own, and a manifest cargo
// cannot read goes to cargo.
func TestDeclaresCrates(t *testing.T) {
	pkg := "[package]\nname = \"app\"\nversion = \"0.1.0\"\n"
	for _, tc := range []struct {
		cargo string
		want  bool
	}{
		{pkg, false},
		{pkg + "\n[dependencies]\n", false},
		{pkg + "\n[dependencies]\nitoa = \"1.0\"\n", true},
		{pkg + "\n[dev-dependencies]\nitoa = { version = \"1.0\" }\n", true},
		{pkg + "\n[build-dependencies.cc]\nversion = \"1\"\n", true},
		{pkg + "\n[target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n", true},
		{pkg + "\n[dependencies]\nlib = { path = \"lib\" }\n", false},
		{pkg + "\n[dependencies]\nlib = { git = \"https://example.com/lib\" }\n", true},
		{"[workspace]\nmembers = [\"a\"]\n\n[workspace.dependencies]\nitoa = \"1\"\n", true},
		{"not toml [", true},
	} {
		if got := declaresCrates(map[string][]byte{"Cargo.toml": []byte(tc.cargo)}); got != tc.want {
			t.Errorf("declaresCrates(%q) = %v, want %v", tc.cargo, got, tc.want)
		}
	}
	member := map[string][]byte{"Cargo.toml": []byte("[workspace]\nmembers = [\"a\"]\n"), "a/Cargo.toml": []byte(pkg + "[dependencies]\nitoa = \"1\"\n")}
	if !declaresCrates(member) {
		t.Error("a member's crate: nothing to install")
	}
}

// TestLocalManifests: an install reads the Cargo.toml of each path
// dependency and each workspace member, a glob as a pattern, inside the
// project, from every manifest it has read, and no other file.
func TestLocalManifests(t *testing.T) {
	got := localManifests(map[string][]byte{"Cargo.toml": []byte(`[package]
name = "app"
version = "0.1.0"

[workspace]
members = ["crates/core", "tools/*", "."]

[dependencies]
core = { path = "crates/core" }
util = { path = "./util", version = "0.1" }
outside = { path = "../outside" }
abs = { path = "/srv/abs" }
itoa = "1"

[dev-dependencies]
helper = { path = "helper" }
`), "crates/core/Cargo.toml": []byte(`[package]
name = "core"

[dependencies]
macros = { path = "../macros" }
escape = { path = "../../../elsewhere" }
serde = { workspace = true }
`)})
	want := []string{"crates/core/Cargo.toml", "crates/macros/Cargo.toml", "helper/Cargo.toml", "tools/*/Cargo.toml", "util/Cargo.toml"}
	if !slices.Equal(got, want) {
		t.Errorf("localManifests = %q, want %q", got, want)
	}
}

// TestSparseIndex: a configured index is a sparse registry over HTTP(S),
// named as cargo names it, with its URL for the proxy; crates.io is the
// default; anything else says what is wrong.
func TestSparseIndex(t *testing.T) {
	for _, tc := range []struct{ index, value, url string }{
		{"", "", ""},
		{"https://crates.example/index", "sparse+https://crates.example/index/", "https://crates.example/index/"},
		{"sparse+http://127.0.0.1:8080/index/", "sparse+http://127.0.0.1:8080/index/", "http://127.0.0.1:8080/index/"},
	} {
		value, urls, err := sparseIndex(tc.index)
		var url string
		if len(urls) > 0 {
			url = urls[0]
		}
		if err != nil || value != tc.value || url != tc.url || len(urls) > 1 {
			t.Errorf("sparseIndex(%q) = %q, %q, %v; want %q, %q", tc.index, value, urls, err, tc.value, tc.url)
		}
	}
	for _, index := range []string{"registry+https://github.com/org/index", "git@example.com:index.git", "file:///srv/index", `https://x.example/"a`} {
		if _, _, err := sparseIndex(index); err == nil {
			t.Errorf("sparseIndex(%q): no error", index)
		}
	}
}
