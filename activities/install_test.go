package activities

import (
	"slices"
	"testing"

	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/workspace"
)

// TestAddInputIsTheManifests: an add command reaches the network, so it
// gets the manifests and the files it writes, never code of the
// workspace that its tool would run (a pip.py that pip would import).
func TestAddInputIsTheManifests(t *testing.T) {
	files := []workspace.File{
		{Path: "go.mod", Data: []byte("module m\n")}, {Path: "go.sum"}, {Path: "main.go"},
		{Path: "pip.py"}, {Path: "requirements.txt"}, {Path: "package.json"}, {Path: ".npmrc"}, {Path: "ls-remote"},
	}
	for name, want := range map[string][]string{
		"go":     {"go.mod", "go.sum"},
		"python": {"requirements.txt"},
		"node":   {".npmrc", "package.json"},
	} {
		l := languages.MustLookup(name)
		var got []string
		for _, f := range addInput(l, l.Deps.Add, files) {
			got = append(got, f.Path)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the add command gets %q, want %q", name, got, want)
		}
	}
}
