package node_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang/langtest"
	"github.com/autocoder/autocoder/internal/lang/languages"
)

func TestDetect(t *testing.T) {
	for _, c := range []langtest.DetectCase{
		{Root: []string{"package.json", "index.js"}, Want: "javascript"},
		{Root: []string{"package.json", "tsconfig.json"}, Want: "typescript"},
		// npm runs either language's tests: the marker's rank decides.
		{Root: []string{"package.json", "tsconfig.json"}, TestCmd: "npm test", Want: "typescript"},
		{Root: []string{"package.json", "requirements.txt"}, TestCmd: "npx jest", Want: "javascript"},
		{Task: "add an express route that lists users", Want: "javascript"},
		{Task: "write a TypeScript function that parses dates", Want: "typescript"},
		{Task: "a node.js CLI that counts words", Want: "javascript"},
	} {
		d := languages.Detect(c.Root, c.TestCmd, c.Task)
		c.Check(t, d.Language.Name, d.Reason)
	}
	for alias, want := range map[string]string{"js": "javascript", "node": "javascript", "ts": "typescript", "TypeScript": "typescript"} {
		if l, err := languages.Lookup(alias); err != nil || l.Name != want {
			t.Errorf("Lookup(%q) = %s, %v; want %s", alias, l.Name, err, want)
		}
	}
}
