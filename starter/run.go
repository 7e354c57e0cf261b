package starter

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/truncate"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/worker"
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

	approvePlan     bool
	policy          string
	allow           []string
	budgetTokens    int
	budgetUSD       float64
	askWhenStuck    bool
	approvalTimeout time.Duration

	protect        []string
	allowTestEdits bool
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
	fl.BoolVar(&o.approvePlan, "approve-plan", false, "wait for a person to approve the plan")
	fl.StringVar(&o.policy, "policy", workflows.PolicyDeny, "safety findings: deny (fail the attempt), ask (wait for approval) or allow")
	fl.StringSliceVar(&o.allow, "allow", nil, "policy categories to allow outright: process, network, dynamic, native, abs-write")
	fl.IntVar(&o.budgetTokens, "budget-tokens", 0, "ask for approval once the task has used this many tokens (0: no limit)")
	fl.Float64Var(&o.budgetUSD, "budget-usd", 0, "ask for approval once the task has cost this much (0: no limit)")
	fl.BoolVar(&o.askWhenStuck, "ask-when-stuck", false, "when iterations run out, ask for guidance instead of failing")
	fl.StringSliceVar(&o.protect, "protect", nil, "more files that belong to the user's tests (globs, e.g. 'checks/**'); checks run them as they were")
	fl.BoolVar(&o.allowTestEdits, "allow-test-edits", false, "let the task change the user's tests (a task about the tests themselves)")
	fl.DurationVar(&o.approvalTimeout, "approval-timeout", workflows.DefaultApprovalTimeout, "how long a question waits; no answer counts as a rejection")
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
	if !o.detach && f.useEmbedded() {
		// The worker runs in the local server, which a first command starts
		// with its environment: a missing model would only fail the task
		// later, so say it before starting anything.
		if in.Model == "" {
			if _, err := llm.EnvFromOS().DefaultSpec(); err != nil {
				return usageError("%v", err)
			}
		}
		stop, err := f.hostIfNeeded(ctx)
		if err != nil {
			return err
		}
		defer stop()
	}
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if o.dir != "" {
		if in.InputSnapshot, err = uploadDir(ctx, f, o.dir); err != nil {
			return err
		}
		announceUsersTests(ctx, f, in)
	}
	if ok, err := worker.EnsureSearchAttributes(ctx, c, f.cfg.Namespace); err != nil {
		slog.Debug("search attributes unavailable; the Web UI list will not filter by phase", "error", err)
	} else {
		in.SearchAttributes = ok
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
	out := o.out
	if out == "" {
		out = o.dir
	}
	return follow(ctx, f, c, id, followOptions{out: out, json: o.json, interactive: true})
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
	switch o.policy {
	case workflows.PolicyDeny, workflows.PolicyAsk, workflows.PolicyAllow:
	default:
		return workflows.TaskInput{}, usageError("--policy %q: want deny, ask or allow", o.policy)
	}
	if _, err := policy.ParseAllow(strings.Join(o.allow, ",")); err != nil {
		return workflows.TaskInput{}, usageError("--allow: %v", err)
	}
	for _, g := range o.protect {
		if err := integrity.ValidGlob(g); err != nil {
			return workflows.TaskInput{}, usageError("--protect: %v", err)
		}
	}
	if math.IsNaN(o.budgetUSD) || math.IsInf(o.budgetUSD, 0) || o.budgetUSD < 0 {
		return workflows.TaskInput{}, usageError("--budget-usd %v: want an amount of dollars, 0 (no limit) or more", o.budgetUSD)
	}
	if o.budgetTokens < 0 || o.approvalTimeout <= 0 {
		return workflows.TaskInput{}, usageError("--budget-tokens must not be negative and --approval-timeout must be positive")
	}
	return workflows.TaskInput{
		Task:            task,
		Language:        lang,
		TestCmd:         o.testCmd,
		MaxIterations:   o.maxIterations,
		Model:           o.model,
		ApprovePlan:     o.approvePlan,
		Policy:          o.policy,
		Allow:           o.allow,
		BudgetTokens:    o.budgetTokens,
		BudgetUSD:       o.budgetUSD,
		AskWhenStuck:    o.askWhenStuck,
		ApprovalTimeout: o.approvalTimeout,
		Protect:         o.protect,
		AllowTestEdits:  o.allowTestEdits,
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

// taskFailure keeps the workflow's own message, written for people.
func taskFailure(err error) error {
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return fmt.Errorf("find task: %w", err)
	}
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

// writeJSON prints v indented, with the raw text it holds escaped so that
// it cannot drive a terminal.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	_, err := w.Write(termsafe.JSON(buf.Bytes()))
	return err
}

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// clipLine makes s one terminal-safe line of at most n bytes plus a mark
// where it was cut.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(termsafe.Line(s)), " ")
	if head := truncate.Head(s, n); len(head) < len(s) {
		return head + "…"
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
