package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// TestEmbeddedModeSurvivesAKill: with no Temporal anywhere, run hosts a
// local server (SQLite file), Web UI and worker itself. The process is
// killed with SIGKILL mid-task; resume brings local mode back and the task
// finishes where it was, without planning again.
func TestEmbeddedModeSurvivesAKill(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := binary(t)
	sc := pythonScenario
	model := llmtest.New(t, sc.scriptRetryAfter(2*time.Second))
	env := newLocal(t, model).env
	out := filepath.Join(t.TempDir(), "out")

	run := exec.CommandContext(ctx, bin, "run", sc.task, "--out", out)
	run.Env = env
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	var id, log string
	killed := false
	sc2 := bufio.NewScanner(stderr)
	for sc2.Scan() {
		line := sc2.Text()
		log += line + "\n"
		if m := startedRE.FindStringSubmatch(line); m != nil {
			id = m[1]
		}
		if strings.Contains(line, "Web UI at http://127.0.0.1:") == false && strings.Contains(line, "web UI: http://127.0.0.1:") {
			if !strings.Contains(line, "/workflows/"+id) {
				t.Errorf("web UI link %q does not name the task", line)
			}
		}
		if strings.Contains(line, "[reflecting]") {
			_ = run.Process.Signal(syscall.SIGKILL)
			killed = true
			break
		}
	}
	_ = run.Wait()
	if !killed || id == "" {
		t.Fatalf("never reached reflecting (id %q):\n%s", id, log)
	}
	callsBefore := model.Calls()

	resume := exec.CommandContext(ctx, bin, "resume", id, "--out", out)
	resume.Env = env
	var rout, rerr bytes.Buffer
	resume.Stdout, resume.Stderr = &rout, &rerr
	if err := resume.Run(); err != nil {
		t.Fatalf("resume: %v\nstdout:\n%s\nstderr:\n%s\nrun log:\n%s", err, rout.String(), rerr.String(), log)
	}
	if !strings.Contains(rout.String(), "succeeded in 2 iteration(s)") {
		t.Errorf("resume output:\n%s", rout.String())
	}
	checkFiles(t, sc, readDir(t, out, sc))
	// After the kill: at most the interrupted turn again.
	if extra := model.Calls() - callsBefore; extra > 1 {
		t.Errorf("resume made %d model calls, want at most 1 (no new plan)", extra)
	}
	for _, r := range model.Requests()[callsBefore:] {
		if strings.Contains(r.LastUser(), planMarker) {
			t.Error("the task planned again after resume")
		}
	}
}
