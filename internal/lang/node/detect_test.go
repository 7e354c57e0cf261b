package node_test

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang/languages"
)

func TestDetect(t *testing.T) {
	tests := []struct {
		root          []string
		testCmd, task string
		want          string
	}{
		{[]string{"package.json", "index.js"}, "", "", "javascript"},
		{[]string{"package.json", "tsconfig.json"}, "", "", "typescript"},
		// npm runs either language's tests: the marker's rank decides.
		{[]string{"package.json", "tsconfig.json"}, "npm test", "", "typescript"},
		{[]string{"package.json", "requirements.txt"}, "npx jest", "", "javascript"},
		{nil, "", "add an express route that lists users", "javascript"},
		{nil, "", "write a TypeScript function that parses dates", "typescript"},
		{nil, "", "a node.js CLI that counts words", "javascript"},
	}
	for _, tt := range tests {
		if got := languages.Detect(tt.root, tt.testCmd, tt.task).Language.Name; got != tt.want {
			t.Errorf("Detect(%q, %q, %q) = %s; want %s", tt.root, tt.testCmd, tt.task, got, tt.want)
		}
	}
	for alias, want := range map[string]string{"js": "javascript", "node": "javascript", "ts": "typescript", "TypeScript": "typescript"} {
		if l, err := languages.Lookup(alias); err != nil || l.Name != want {
			t.Errorf("Lookup(%q) = %s, %v; want %s", alias, l.Name, err, want)
		}
	}
}
