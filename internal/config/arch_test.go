package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// envReaders are the files, besides this package, that still read the
// environment themselves, and how many times. The list only shrinks: a new
// reader fails the test, and so does an entry that has gone stale.
var envReaders = map[string]int{
	// The sandbox images (AUTOCODER_IMAGE_PYTHON, AUTOCODER_IMAGE_GO) are
	// chosen where the profiles are declared; Fingerprint counts them.
	"sandbox/profiles.go": 1,
	// Whether the tests run in CI (a missing tool fails instead of skipping).
	"internal/testenv/testenv.go": 1,
}

// TestOnlyConfigReadsTheEnvironment: os.Getenv and os.LookupEnv are called
// in internal/config only, apart from envReaders.
func TestOnlyConfigReadsTheEnvironment(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]int{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if filepath.Dir(rel) == filepath.Join("internal", "config") {
			return nil
		}
		if n := envReads(t, path); n > 0 {
			found[filepath.ToSlash(rel)] = n
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, n := range found {
		if envReaders[file] != n {
			t.Errorf("%s reads the environment %d time(s) (allowed %d): resolve the setting in internal/config and pass it down", file, n, envReaders[file])
		}
	}
	for file, n := range envReaders {
		if found[file] == 0 {
			t.Errorf("%s no longer reads the environment (allowed %d): remove it from envReaders", file, n)
		}
	}
}

// envReads counts the calls of os.Getenv and os.LookupEnv in a file.
func envReads(t *testing.T, path string) int {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	osName := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"os"` {
			osName = "os"
			if imp.Name != nil {
				osName = imp.Name.Name
			}
		}
	}
	if osName == "" {
		return 0
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		sel, ok := node.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv") {
			n++
		}
		return true
	})
	return n
}
