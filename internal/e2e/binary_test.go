package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/workflows"
)

// taskIDPattern matches a task id: "autocoder-", the task's first words,
// and ten hex digits (taskclient.IDFor).
const taskIDPattern = `autocoder-(?:[0-9a-z]+-)*[0-9a-f]{10}`

var startedRE = regexp.MustCompile(`task (` + taskIDPattern + `) started`)

// TestBinaryEndToEnd runs the same flow through the built binary, with the
// worker, the run and the status queries as separate processes.
func TestBinaryEndToEnd(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go toolchain needed to build the binary: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newCluster(t, pythonScenario.script())
	bin, env := c.bin, c.env

	out := filepath.Join(t.TempDir(), "out")
	run := exec.CommandContext(ctx, bin, "run", pythonScenario.task, "--lang", "python", "--out", out)
	run.Env = env
	var runOut bytes.Buffer
	run.Stdout = &runOut
	stderr, err := run.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Start(); err != nil {
		t.Fatalf("start run: %v", err)
	}
	ids := make(chan string, 1)
	var runErr strings.Builder
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			runErr.WriteString(sc.Text() + "\n")
			if m := startedRE.FindStringSubmatch(sc.Text()); m != nil {
				ids <- m[1]
			}
		}
	}()

	var id string
	select {
	case id = <-ids:
	case <-time.After(time.Minute):
		t.Fatalf("run never printed a task id")
	}

	// Query from a third process while the task runs.
	seen := map[workflows.Phase]bool{}
	for !seen[workflows.PhaseSucceeded] && !seen[workflows.PhaseFailed] && ctx.Err() == nil {
		st := statusJSON(t, bin, env, id)
		seen[st.Phase] = true
		time.Sleep(200 * time.Millisecond)
	}
	<-scanDone
	if err := run.Wait(); err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, runOut.String(), runErr.String())
	}
	if !seen[workflows.PhaseReflecting] || !seen[workflows.PhaseSucceeded] {
		t.Errorf("status saw phases %v, want reflecting and succeeded among them", seen)
	}
	if !strings.Contains(runOut.String(), "succeeded in 2 iteration(s)") {
		t.Errorf("run output does not report 2 iterations:\n%s", runOut.String())
	}
	if !strings.Contains(runErr.String(), "reflecting") {
		t.Errorf("run progress never showed reflecting:\n%s", runErr.String())
	}
	checkFiles(t, pythonScenario, readDir(t, out, pythonScenario))

	final := statusJSON(t, bin, env, id)
	if final.Iteration != 2 || len(final.Checkpoints) != 2 {
		t.Errorf("final status: iteration %d, %d checkpoints; want 2 and 2", final.Iteration, len(final.Checkpoints))
	}
	// The list reads the tokens from the memo, as the status has them.
	var rows []taskclient.Task
	if err := json.Unmarshal([]byte(c.mustCLI("list", "--json")), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("list --json: %v, %d rows", err, len(rows))
	}
	want := final.Usage
	want.PerModel = nil
	if u := rows[0].Usage; u == nil || u.Calls == 0 || !reflect.DeepEqual(*u, want) {
		t.Errorf("list's usage %+v, want the status's %+v", u, want)
	}
}

func statusJSON(t *testing.T, bin string, env []string, id string) workflows.Status {
	t.Helper()
	cmd := exec.Command(bin, "status", id, "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("status %s: %v\n%s", id, err, ee.Stderr)
		}
		t.Fatalf("status %s: %v", id, err)
	}
	var st workflows.Status
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("decode status: %v\n%s", err, out)
	}
	return st
}

// TestBinaryErrors checks the messages and exit codes of common mistakes.
func TestBinaryErrors(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	up := cleanEnv("TEMPORAL_ADDRESS="+ts.GetFrontendHostPort(), "TEMPORAL_NAMESPACE="+ts.GetDefaultNamespace(), "AUTOCODER_DATA_DIR="+t.TempDir())
	down := cleanEnv("TEMPORAL_ADDRESS=127.0.0.1:1", "AUTOCODER_DATA_DIR="+t.TempDir())
	local := cleanEnv("AUTOCODER_DEV_PORT="+strconv.Itoa(freePort(t)), "AUTOCODER_DATA_DIR="+t.TempDir())

	tests := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"unknown task", up, []string{"status", "autocoder-nope"}, 4, "no task autocoder-nope here"},
		{"temporal unreachable", down, []string{"status", "x"}, 3, "TEMPORAL_ADDRESS"},
		{"missing task text", up, []string{"run"}, 2, "autocoder run takes TASK (got no argument)"},
		{"bad flag", up, []string{"run", "--max-iterations", "zero", "x"}, 2, "invalid argument"},
		{"bad language", up, []string{"run", "--lang", "cobol", "x"}, 2, `--lang "cobol": unknown language (want one of python, go,`},
		{"bad model", up, []string{"run", "--model", "nosuch:model", "x"}, 2, "--model"},
		{"no model in local mode", local, []string{"run", "x"}, 2, "OPENAI_API_KEY"},
		{"empty task id", up, []string{"transcript", ""}, 2, "the task id is empty (autocoder transcript ID [flags]); autocoder list shows the ids"},
		{"blank lesson id", up, []string{"lessons", "forget", " "}, 2, "the lesson id is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, tc.args...)
			cmd.Env = tc.env
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(string(out), tc.wantErr) {
				t.Errorf("exit %d, output:\n%s\nwant exit %d and %q", code, out, tc.wantCode, tc.wantErr)
			}
		})
	}
}
