package starter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

type runOptions struct {
	lang          string
	out           string
	dir           string
	testCmd       string
	model         string
	maxIterations int
	detach        bool
	json          bool
}

func newRunCmd(f *factory) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run TASK",
		Short: "Start a coding task and follow it until it is done",
		Example: `  autocoder run "Build a CLI that converts CSV to JSON" --lang python
  autocoder run --dir ./myproj --test-cmd "go test ./..." "Fix the failing parser test"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTask(cmd.Context(), f, strings.TrimSpace(args[0]), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.lang, "lang", "", "language: python or go (default: go when --dir has go.mod, else python)")
	fl.StringVar(&o.out, "out", "", "directory to write the final files to (default: --dir, else ./<task id>)")
	fl.StringVar(&o.dir, "dir", "", "existing project to work on; uploaded as the starting workspace")
	fl.StringVar(&o.testCmd, "test-cmd", "", "shell command whose success decides the task (default: tests the model writes)")
	fl.StringVar(&o.model, "model", "", "model as provider:model, e.g. openai:gpt-4.1 (default: "+llm.EnvModel+" or the provider whose key is set)")
	fl.IntVar(&o.maxIterations, "max-iterations", workflows.DefaultMaxIterations, "attempts allowed across all plan steps")
	fl.BoolVar(&o.detach, "detach", false, "start the task and return at once")
	fl.BoolVar(&o.json, "json", false, "print the result as JSON on stdout")
	return cmd
}

func runTask(ctx context.Context, f *factory, task string, o runOptions) error {
	in, err := taskInput(task, o)
	if err != nil {
		return err
	}
	if o.model != "" {
		if _, err := llm.ParseSpec(o.model); err != nil {
			return usageError("--model: %v", err)
		}
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if o.dir != "" {
		if in.InputSnapshot, err = uploadDir(ctx, f, o.dir); err != nil {
			return err
		}
	}
	id := "autocoder-" + randomSuffix()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:            id,
		TaskQueue:     workflows.TaskQueue,
		StaticSummary: clipLine(task, 200),
		StaticDetails: fmt.Sprintf("language: %s\n\ntest command: %s\n\nmax iterations: %d\n\nmodel: %s",
			in.Language, orDefault(in.TestCmd, "written by the model"), in.MaxIterations, orDefault(in.Model, "worker default")),
	}, workflows.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("start task: %w", err)
	}
	fmt.Fprintf(f.stderr, "task %s started\nweb UI: %s\n", id, f.cfg.workflowURL(id))
	if o.detach {
		if o.json {
			return writeJSON(f.stdout, map[string]string{"id": id, "runId": run.GetRunID(), "url": f.cfg.workflowURL(id)})
		}
		fmt.Fprintln(f.stdout, id)
		return nil
	}
	return followTask(ctx, f, c, run, o)
}

func taskInput(task string, o runOptions) (workflows.TaskInput, error) {
	if task == "" {
		return workflows.TaskInput{}, usageError("the task text is empty")
	}
	if o.maxIterations < 1 {
		return workflows.TaskInput{}, usageError("--max-iterations must be at least 1")
	}
	lang := o.lang
	if lang == "" {
		lang = "python"
		if o.dir != "" {
			if _, err := os.Stat(filepath.Join(o.dir, "go.mod")); err == nil {
				lang = "go"
			}
		}
	}
	if lang != "python" && lang != "go" {
		return workflows.TaskInput{}, usageError("--lang %q: want python or go", lang)
	}
	return workflows.TaskInput{
		Task:          task,
		Language:      lang,
		TestCmd:       o.testCmd,
		MaxIterations: o.maxIterations,
		Model:         o.model,
	}, nil
}

// uploadDir stores an existing project as the task's input snapshot.
func uploadDir(ctx context.Context, f *factory, dir string) (string, error) {
	files, summary, err := workspace.LoadDir(dir, workspace.LoadOptions{})
	if err != nil {
		return "", usageError("--dir %s: %v", dir, err)
	}
	st, err := f.Store(ctx)
	if err != nil {
		return "", err
	}
	id, err := st.PutSnapshot(ctx, files)
	if err != nil {
		return "", usageError("--dir %s: %v", dir, err)
	}
	fmt.Fprintf(f.stderr, "uploaded %s: %d files, %d bytes; %d skipped\n", dir, summary.Files, summary.Bytes, len(summary.Skipped))
	return id, nil
}

// followTask prints progress until the task ends, then writes its files.
func followTask(ctx context.Context, f *factory, c client.Client, run client.WorkflowRun, o runOptions) error {
	done := make(chan error, 1)
	var result workflows.TaskResult
	go func() { done <- run.Get(ctx, &result) }()

	p := &progress{w: f.stderr}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	var runErr error
wait:
	for {
		select {
		case runErr = <-done:
			break wait
		case <-tick.C:
			if st, err := queryStatus(ctx, c, run.GetID()); err == nil {
				p.show(st)
			}
		}
	}
	if st, err := queryStatus(ctx, c, run.GetID()); err == nil {
		p.show(st)
		result.Status = st
	}
	if runErr != nil {
		return taskFailure(runErr)
	}
	out := o.out
	if out == "" {
		out = o.dir
	}
	if out == "" {
		out = run.GetID()
	}
	n, err := writeSnapshot(ctx, f, result.SnapshotID, out)
	if err != nil {
		return err
	}
	if o.json {
		return writeJSON(f.stdout, map[string]any{"id": run.GetID(), "out": out, "files": n, "result": result})
	}
	note := ""
	if result.TestsByModel {
		note = " (tests written by the model: review them, they decide what passed)"
	}
	fmt.Fprintf(f.stdout, "✔ task %s succeeded in %d iteration(s)%s\n  %d file(s) written to %s\n  tokens: %d in, %d out\n",
		run.GetID(), result.Iterations, note, n, out, result.Status.Usage.PromptTokens, result.Status.Usage.CompletionTokens)
	return nil
}

func writeSnapshot(ctx context.Context, f *factory, snapshotID, dir string) (int, error) {
	st, err := f.Store(ctx)
	if err != nil {
		return 0, err
	}
	files, err := st.GetSnapshot(ctx, snapshotID)
	if err != nil {
		return 0, fmt.Errorf("read result snapshot %s: %w", snapshotID, err)
	}
	if err := workspace.WriteDir(dir, files); err != nil {
		return 0, fmt.Errorf("write files to %s: %w", dir, err)
	}
	return len(files), nil
}

// taskFailure keeps the workflow's own message, written for people.
func taskFailure(err error) error {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return fmt.Errorf("%w: %s", errTaskFailed, app.Message())
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return fmt.Errorf("%w: the task was cancelled", errTaskFailed)
	}
	return fmt.Errorf("%w: %v", errTaskFailed, err)
}

func queryStatus(ctx context.Context, c client.Client, id string) (workflows.Status, error) {
	var st workflows.Status
	v, err := c.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
	if err != nil {
		return st, err
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decode status: %w", err)
	}
	return st, nil
}

// progress prints a line whenever the task moves.
type progress struct {
	w           io.Writer
	last        string
	checkpoints int
}

func (p *progress) show(st workflows.Status) {
	for _, cp := range st.Checkpoints[min(p.checkpoints, len(st.Checkpoints)):] {
		mark := "✗"
		if cp.Passed {
			mark = "✓"
		}
		fmt.Fprintf(p.w, "  %s step %d, iteration %d: %s\n", mark, cp.Step, cp.Iteration, cp.Summary)
	}
	p.checkpoints = len(st.Checkpoints)
	line := progressLine(st)
	if line != p.last {
		fmt.Fprintln(p.w, line)
		p.last = line
	}
}

func progressLine(st workflows.Status) string {
	if st.Step == 0 {
		return fmt.Sprintf("[%s]", st.Phase)
	}
	return fmt.Sprintf("[%s] step %d/%d · iteration %d/%d", st.Phase, st.Step, len(st.Plan), st.Iteration, st.MaxIterations)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func clipLine(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
