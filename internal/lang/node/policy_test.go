package node

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/internal/workspace"
)

// TestPolicyLineRules checks what the policy finds in the languages'
// source with their line rules: spawning, remote calls and deletions at
// absolute paths, while a test may call this machine.
func TestPolicyLineRules(t *testing.T) {
	tests := []struct {
		path, line, want string
	}{
		{"src/run.js", "const { execFile } = require('node:child_process');", policy.Process},
		{"src/run.ts", "import { spawn } from 'child_process';", policy.Process},
		{"src/sync.js", "const res = await fetch('https://api.example.com/items');", policy.Network},
		{"src/sync.ts", "import https from 'node:https';", policy.Network},
		{"src/clean.js", "fs.rmSync('/var/data', { recursive: true });", policy.AbsWrite},
		{"src/clean.ts", "await fs.promises.rm(`/home/app/cache`, { recursive: true });", policy.AbsWrite},
		{"src/clean.mjs", "unlinkSync('~/notes.txt');", policy.AbsWrite},
		{"src/addon.js", "process.dlopen(module, './addon.node');", policy.Native},
		{"src/eval.js", "const f = new Function('a', 'return a + 1');", policy.Dynamic},
		{"test/api.test.js", "const r = await fetch('https://api.example.com/items');", policy.Network},
		{"test/api.test.ts", "const r = await fetch(`http://localhost:${port}/items`);", ""},
		{"src/clean.js", "fs.rmSync(path.join(dir, 'out'), { recursive: true });", ""},
		{"src/cart.js", "// child_process is not needed here", ""},
	}
	for _, l := range []lang.Language{JavaScript(), TypeScript()} {
		rules := l.Policy.LineRules
		for _, tt := range tests {
			files := []workspace.File{{Path: tt.path, Data: []byte(tt.line + "\n")}}
			got, err := policy.CheckLines(files, policy.DefaultRules(), []policy.LineRules{rules}, policy.AllChanged())
			if err != nil {
				t.Fatal(err)
			}
			if tt.want == "" && len(got) > 0 || tt.want != "" && (len(got) != 1 || got[0].Rule != tt.want) {
				t.Errorf("%s: %s %q: findings %v; want %q", l.Name, tt.path, tt.line, got, tt.want)
			}
		}
	}
}
