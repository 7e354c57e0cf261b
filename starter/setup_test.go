package starter

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/mcp"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// TestProjectSetup: --setup's command wins; an empty --setup or
// --no-setup runs none; else a project with .autocoder/setup.sh runs it
// with sh, and one without runs nothing. --setup with --no-setup, or
// without --dir, is a usage error.
func TestProjectSetup(t *testing.T) {
	script := []workspace.File{{Path: activities.SetupScript, Data: []byte("make gen\n")}, {Path: "main.py"}}
	plain := []workspace.File{{Path: "main.py"}}
	for _, tc := range []struct {
		name  string
		o     RunOptions
		files []workspace.File
		want  string
	}{
		{"flag", RunOptions{Setup: " make gen ", SetupGiven: true}, script, "make gen"},
		{"empty flag skips the script", RunOptions{SetupGiven: true}, script, ""},
		{"no-setup skips the script", RunOptions{NoSetup: true}, script, ""},
		{"the project's script", RunOptions{}, script, "sh " + activities.SetupScript},
		{"none", RunOptions{}, plain, ""},
	} {
		if got := projectSetup(tc.o, tc.files); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	o := RunOptions{Task: "t", Lang: "python", MaxIterations: 1, Policy: workflows.PolicyWarn, ApprovalTimeout: 1, Setup: "make gen", NoSetup: true}
	if _, err := taskInput(o); err == nil || !strings.Contains(err.Error(), "--no-setup") {
		t.Errorf("--setup with --no-setup: %v", err)
	}
	o.NoSetup = false
	if _, err := taskInput(o); err == nil || !strings.Contains(err.Error(), "--setup needs --dir") {
		t.Errorf("--setup without --dir: %v", err)
	}
	o.Setup, o.SetupGiven = "", true
	if _, err := taskInput(o); err == nil || !strings.Contains(err.Error(), "--setup needs --dir") {
		t.Errorf("an empty --setup without --dir: %v", err)
	}
	o.Setup, o.Dir = "make gen", t.TempDir()
	if in, err := taskInput(o); err != nil || in.Setup != "make gen" {
		t.Errorf("--setup: %+v, %v", in.Setup, err)
	}
}

// TestLeaveOutSetup: what the task writes back leaves out the setup's
// changes the task did not touch: a file the setup made is not written, a
// file it changed is written as the input had it; a file the task changed
// after the setup, and the task's own files, are written.
func TestLeaveOutSetup(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	file := func(p, d string) workspace.File { return workspace.File{Path: p, Data: []byte(d)} }
	input := []workspace.File{file("app.py", "app"), file("config.py", "user's")}
	setup := []workspace.File{file("app.py", "app"), file("config.py", "generated"), file("gen/a.py", "a"), file("gen/b.py", "b")}
	id, err := st.PutSnapshot(ctx, setup)
	if err != nil {
		t.Fatal(err)
	}
	final := []workspace.File{file("app.py", "app, changed"), file("config.py", "generated"), file("gen/a.py", "a"), file("gen/b.py", "b, changed"), file("new.py", "new")}
	task := workflows.Status{Setup: &workflows.SetupStatus{Snapshot: id, Changed: 3}}
	got, err := leaveOutSetup(ctx, st, task, input, final)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, f := range got {
		text = append(text, f.Path+"="+string(f.Data))
	}
	if want := "app.py=app, changed config.py=user's gen/b.py=b, changed new.py=new"; strings.Join(text, " ") != want {
		t.Errorf("written back: %s\nwant:         %s", strings.Join(text, " "), want)
	}
	if taskStart(task) != id || taskStart(workflows.Status{InputSnapshot: "in"}) != "in" {
		t.Errorf("taskStart: %q", taskStart(task))
	}
}

// TestMCPStartSetupNeedsDir: start_task's setup argument reaches the
// task's options, and its usage error names the tool's arguments, not
// run's flags.
func TestMCPStartSetupNeedsDir(t *testing.T) {
	var stderr bytes.Buffer
	tasks := &mcpTasks{f: NewFactory(config{}, IOStreams{ErrOut: &stderr})}
	_, err := tasks.Start(context.Background(), mcp.StartArgs{Task: "t", Language: "python", Setup: "make gen"})
	if err == nil || !strings.HasPrefix(err.Error(), "setup needs dir:") || strings.Contains(err.Error(), "--") {
		t.Errorf("setup without dir: %v", err)
	}
}
