package activities

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/testenv"
)

var planIn = PlanInput{Task: "t", Language: "python", Model: "openai:gpt-4.1-mini"}

// tmpfs mounts a small filesystem of its own for the test to fill.
func tmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size)
	testenv.RequireService(t, "a tmpfs mount (root)", err)
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes to dir until its filesystem is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	name := filepath.Join(dir, "filler")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return name
		}
	}
}

// TestFullDiskStopsTheModelCall: with the disk full the model is not
// paid, and the error, final, names the place and the space needed; once
// space is freed the call goes ahead.
func TestFullDiskStopsTheModelCall(t *testing.T) {
	e := newEnv(t, llmtest.Text("1. Do it."))
	disk := tmpfs(t, "16m")
	e.acts.SpacePaths, e.acts.MinFreeSpace = []string{disk}, 4<<20
	filler := fill(t, disk)

	_, err := e.tenv.ExecuteActivity(e.acts.Plan, planIn)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != ErrTypeNoSpace || !app.NonRetryable() {
		t.Fatalf("error = %v, want a final %s application error", err, ErrTypeNoSpace)
	}
	for _, want := range []string{disk, "4 MiB needed", minFreeSpaceSetting} {
		if !strings.Contains(app.Message(), want) {
			t.Errorf("message %q does not say %q", app.Message(), want)
		}
	}
	if n := e.model.Calls(); n != 0 {
		t.Errorf("the model was called %d times with the disk full", n)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	run[PlanOutput](t, e, e.acts.Plan, planIn)
	if n := e.model.Calls(); n != 1 {
		t.Errorf("model calls after freeing space = %d, want 1", n)
	}
}

// TestSpaceIsCheckedWhereTheStoreWrites: by default the store's directory
// is checked, with the threshold the worker was given.
func TestSpaceIsCheckedWhereTheStoreWrites(t *testing.T) {
	e := newEnv(t, llmtest.Text("1. Do it."))
	e.acts.MinFreeSpace = 1000000 << 30
	_, err := e.tenv.ExecuteActivity(e.acts.Plan, planIn)
	dir := e.acts.Store.(diskDir).Dir()
	if err == nil || !strings.Contains(err.Error(), "free disk space in "+dir) || !strings.Contains(err.Error(), "1000000 GiB needed") {
		t.Errorf("error = %v, want one naming the store's directory %s and the space needed", err, dir)
	}
	if n := e.model.Calls(); n != 0 {
		t.Errorf("model calls = %d, want none", n)
	}
}
