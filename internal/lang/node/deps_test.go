package node

import (
	"slices"
	"testing"
)

// TestDeclaresPackages: only a package.json that names a package (of any
// kind npm installs) asks for an install; one npm cannot read does too,
// for npm to say why.
func TestDeclaresPackages(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{`{"name": "app", "scripts": {"test": "node --test"}}`, false},
		{`{"dependencies": {}, "devDependencies": {}}`, false},
		{`{"dependencies": {"left-pad": "1.3.0"}}`, true},
		{`{"devDependencies": {"mocha": "10.4.0"}}`, true},
		{`{"optionalDependencies": {"fsevents": "2.3.3"}}`, true},
		{`{"peerDependencies": {"react": "18.3.1"}}`, true},
		{`{"dependencies": `, true},
	} {
		if got := declaresPackages(map[string][]byte{"package.json": []byte(c.text)}); got != c.want {
			t.Errorf("%s: %v, want %v", c.text, got, c.want)
		}
	}
}

// TestDeclaresWorkspaces: a root package.json with workspaces to link, or
// a workspace's package.json naming a package, asks for an install.
func TestDeclaresWorkspaces(t *testing.T) {
	if !declaresPackages(map[string][]byte{"package.json": []byte(`{"workspaces": ["packages/*"]}`)}) {
		t.Error("workspaces to link: no install")
	}
	if !declaresPackages(map[string][]byte{"package.json": []byte(`{"name": "root"}`), "packages/a/package.json": []byte(`{"dependencies": {"left-pad": "1.3.0"}}`)}) {
		t.Error("a workspace's dependency: no install")
	}
}

// TestLocalPackages: an install reads each workspace's package.json (a
// glob as a pattern, in either of npm's spellings) and each file:
// package's, or its tarball, and a local package's bins, from every
// manifest it has read, inside the project only.
func TestLocalPackages(t *testing.T) {
	for _, c := range []struct {
		manifests map[string]string
		want      []string
	}{
		{map[string]string{"package.json": `{"workspaces": ["packages/*", "tools/cli", "../outside", "/abs"],
		  "dependencies": {"a": "file:./libs/a", "b": "file:vendor/b-1.0.0.tgz", "c": "^1.0.0", "d": "file:../elsewhere"}}`},
			[]string{"libs/a/package.json", "packages/*/package.json", "tools/cli/package.json", "vendor/b-1.0.0.tgz"}},
		{map[string]string{"package.json": `{"workspaces": {"packages": ["apps/*"]}, "bin": "root-cli.js"}`,
			"apps/web/package.json": `{"devDependencies": {"shared": "file:../../shared", "near": "../near", "old": "./old-1.0.tar"}}`,
			"apps/cli/package.json": `{"bin": {"b": "bin/b.js", "a": "./bin/a.js"}}`, "tools/x/package.json": `{"bin": "x.js"}`},
			[]string{"apps/*/package.json", "apps/cli/bin/a.js", "apps/cli/bin/b.js", "apps/near/package.json", "apps/web/old-1.0.tar", "shared/package.json", "tools/x/x.js"}},
		{map[string]string{"package.json": `{"workspaces": `}, nil},
	} {
		m := map[string][]byte{}
		for k, v := range c.manifests {
			m[k] = []byte(v)
		}
		if got := localPackages(m); !slices.Equal(got, c.want) {
			t.Errorf("%v: localPackages = %q, want %q", c.manifests, got, c.want)
		}
	}
}
