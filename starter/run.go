package starter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/activities"
	conf "github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/policy"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/truncate"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/workflows"
)

// RunOptions are run's arguments.
type RunOptions struct {
	Task    string
	Lang    string
	Out     string
	Dir     string
	TestCmd string
	Model   string
	// Fallback are the models that answer when the one before fails with
	// an outage (--fallback, else the configuration's fallback).
	Fallback []string
	// Prices are the configuration's, which a dollar budget needs.
	Prices        llm.PriceTable
	MaxIterations int
	Detach        bool
	JSON          bool

	ApprovePlan     bool
	Policy          string
	Allow           []string
	BudgetTokens    int
	BudgetUSD       float64
	AskWhenStuck    bool
	ApprovalTimeout time.Duration

	Protect        []string
	AllowTestEdits bool

	// The tool loop: its bounds, and a person's approval for commands.
	MaxTurns        int
	ContextTokens   int
	MaxOutputTokens int
	ApproveCommands bool
	AllowCommands   []string

	// Setup is the project's setup command (--setup); SetupGiven says the
	// flag was set, even to nothing, and NoSetup runs none, not even the
	// project's SetupScript.
	Setup      string
	SetupGiven bool
	NoSetup    bool

	// Notify are webhooks (URL or FORMAT:URL) told when the task waits
	// for a person and when it ends, besides the configuration file's.
	Notify []string
}

func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	var o RunOptions
	cmd := &cobra.Command{
		Use:   "run TASK",
		Short: "Start a coding task and follow it until it is done",
		Long: "Start a coding task and follow it until it is done. The task runs in the local server (or on the\n" +
			"Temporal server " + envTemporalAddress + " names); Ctrl-C only stops following, and `autocoder resume ID`\n" +
			"re-attaches.\n\n" +
			"The model: --model PROVIDER:NAME (" + llm.ProviderNames() + "; the provider alone takes its\n" +
			"default model), else " + llm.EnvModel + " or the configuration file's model (autocoder config show),\n" +
			"else the first provider whose settings are set: " + llm.CredentialVars() + ".\n\n" +
			"With --dir the task works on a copy of your project and writes back the files it changed; without\n" +
			"it the files go to --out (default ./<task id>). Your tests judge: --test-cmd, else the project's tests\n" +
			"run by the language's test command, else tests the model writes.",
		Example: `  autocoder run "Build a CLI that converts CSV to JSON" --lang python
  autocoder run --dir ./myproj --test-cmd "go test ./..." "Fix the failing parser test"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Task = strings.TrimSpace(args[0])
			o.SetupGiven = cmd.Flags().Changed("setup")
			o.fromSettings(cmd.Flags().Changed, f.cfg.settings)
			if runF != nil {
				return runF(&o)
			}
			return runTask(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Lang, "lang", "auto", "language: "+languages.List()+", or auto: from the --dir project's files (go.mod, package.json, Cargo.toml, ...), else the task's words, else "+languages.Default)
	fl.StringVar(&o.Out, "out", "", "directory to write the final files to (default: --dir, else ./<task id>)")
	fl.StringVar(&o.Dir, "dir", "", "existing project to work on; uploaded as the starting workspace")
	fl.StringVar(&o.TestCmd, "test-cmd", "", "shell command whose success decides the task (default: the --dir project's tests, run by the language's test command; without any, tests the model writes)")
	fl.StringVar(&o.Model, "model", "", "model as provider:model, e.g. openai:gpt-4.1 (default: "+llm.EnvModel+", the configuration file's model, or the provider whose key is set)")
	fl.StringSliceVar(&o.Fallback, "fallback", nil, "models (provider:model, repeatable or comma-separated) that answer a turn, in order, when the one before fails with a 5xx, a timeout or a rate limit (default: the configuration's fallback)")
	fl.IntVar(&o.MaxIterations, "max-iterations", workflows.DefaultMaxIterations, "attempts allowed across all plan steps")
	fl.BoolVar(&o.Detach, "detach", false, "start the task and return at once")
	fl.BoolVar(&o.JSON, "json", false, "print the result as JSON on stdout")
	fl.BoolVar(&o.ApprovePlan, "approve-plan", false, "wait for a person to approve the plan")
	fl.StringVar(&o.Policy, "policy", workflows.DefaultPolicy, "safety findings in the task's own code: warn (report them for review), deny (fail the attempt), ask (wait for approval) or allow")
	fl.StringSliceVar(&o.Allow, "allow", nil, "policy categories to allow outright: "+strings.Join(policy.Categories(), ", "))
	fl.IntVar(&o.BudgetTokens, "budget-tokens", 0, "ask for approval once the task has used this many tokens (0: no limit)")
	fl.Float64Var(&o.BudgetUSD, "budget-usd", 0, "ask for approval once the task has cost this much (0: no limit)")
	fl.BoolVar(&o.AskWhenStuck, "ask-when-stuck", false, "when iterations run out, ask for guidance instead of failing")
	fl.StringSliceVar(&o.Protect, "protect", nil, "more files that belong to the user's tests (globs, e.g. 'checks/**'); checks run them as they were")
	fl.BoolVar(&o.AllowTestEdits, "allow-test-edits", false, "let the task change the user's tests (a task about the tests themselves)")
	fl.DurationVar(&o.ApprovalTimeout, "approval-timeout", workflows.DefaultApprovalTimeout, "how long a question waits; no answer counts as a rejection")
	fl.IntVar(&o.MaxTurns, "max-turns", 0, "model turns per attempt (0: the default)")
	fl.IntVar(&o.ContextTokens, "context-tokens", 0, "tokens a turn may send before older tool output is elided and older turns summarized (0: the default)")
	fl.IntVar(&o.MaxOutputTokens, "max-output-tokens", 0, "tokens the model may write per turn (0: the default)")
	fl.BoolVar(&o.ApproveCommands, "approve-commands", false, "wait for a person before each command the model runs, unless --allow-command covers it, and before each package it installs")
	// StringArray, not StringSlice: a command prefix may hold a comma.
	fl.StringArrayVar(&o.AllowCommands, "allow-command", nil, "with --approve-commands: a command prefix that runs without asking (repeatable), e.g. 'pytest'")
	fl.StringVar(&o.Setup, "setup", "", "shell command that prepares the project before the model starts (code generation, fetched files), run once in the sandbox, reaching the network only through the egress proxy (default: sh "+activities.SetupScript+" when the --dir project has one)")
	fl.BoolVar(&o.NoSetup, "no-setup", false, "run no setup command, not even the project's "+activities.SetupScript)
	fl.StringArrayVar(&o.Notify, "notify", nil, "webhook told when the task waits for you, succeeds or fails (repeatable; added to the configuration file's [[notifications]]): URL, or FORMAT:URL with FORMAT json, slack or discord (default: slack or discord by the URL's host, else json)")
	return cmd
}

// fromSettings takes the limits and the policy mode whose flag is not set
// (changed says which are) from the configuration (file or default).
func (o *RunOptions) fromSettings(changed func(flag string) bool, s *conf.Config) {
	for flag, set := range map[string]func(key string){
		"max-iterations": func(k string) { o.MaxIterations = s.Int(k) },
		"max-turns":      func(k string) { o.MaxTurns = s.Int(k) },
		"budget-tokens":  func(k string) { o.BudgetTokens = s.Int(k) },
		"budget-usd":     func(k string) { o.BudgetUSD = s.Float(k) },
		"policy":         func(k string) { o.Policy = s.String(k) },
		"fallback":       func(k string) { o.Fallback = s.List(k) },
	} {
		if !changed(flag) {
			set(conf.KeyOfFlag(flag))
		}
	}
	o.Prices = s.Prices()
}

func runTask(ctx context.Context, f *Factory, o RunOptions) error {
	c, run, err := startTask(ctx, f, o)
	if err != nil {
		return err
	}
	id := run.ID
	fmt.Fprintf(f.IO.ErrOut, "task %s started\n", id)
	if url := f.cfg.workflowURL(id); url != "" {
		fmt.Fprintf(f.IO.ErrOut, "web UI: %s\n", url)
	}
	out := o.Out
	if out == "" {
		out = o.Dir
	}
	if o.Detach {
		// Nothing writes a detached task's files: say how to get them.
		fmt.Fprintf(f.IO.ErrOut, "follow it with `autocoder watch %s`; once it succeeds, write its files with `autocoder export %s %s`\n",
			id, id, orDefault(out, "DIR"))
		if o.JSON {
			started := map[string]string{"id": id, "runId": run.RunID}
			if url := f.cfg.workflowURL(id); url != "" {
				started["url"] = url
			}
			return writeJSON(f.IO.Out, started)
		}
		fmt.Fprintln(f.IO.Out, id)
		return nil
	}
	return follow(ctx, f, c, id, followOptions{out: out, json: o.JSON, interactive: true})
}

// startTask checks o, uploads its project and starts the task on a server
// with this shell's settings, saying on f.IO.ErrOut what it chose on the
// way (the language, the files uploaded, whose tests judge).
func startTask(ctx context.Context, f *Factory, o RunOptions) (TaskClient, taskclient.Started, error) {
	var none taskclient.Started
	in, err := taskInput(o)
	if err != nil {
		return nil, none, err
	}
	targets, err := notifyTargets(f.cfg.settings, o.Notify)
	if err != nil {
		return nil, none, err
	}
	if l, reason, _ := taskLanguage(o); reason != "" {
		fmt.Fprintf(f.IO.ErrOut, "language: %s (%s; --lang chooses another)\n", l.Title, reason)
	}
	if o.Model != "" {
		if _, err := llm.ParseSpec(o.Model); err != nil {
			return nil, none, usageError("--model: %v", err)
		}
	}
	// The task runs with the settings of the local server's worker: they
	// must be this shell's.
	f.need = needOwnSettings
	if o.Model != "" {
		f.settingsIgnored = []string{"model"}
	}
	if !o.Detach && f.useEmbedded() {
		// The worker runs in the local server, which a first command starts
		// with its environment: a missing model would only fail the task
		// later, so say it before starting anything.
		if in.Model == "" {
			if _, err := f.cfg.settings.DefaultModel(); err != nil {
				return nil, none, usageError("%v", err)
			}
		}
		stop, err := f.hostIfNeeded(ctx)
		if err != nil {
			return nil, none, err
		}
		defer stop()
	}
	c, err := f.TaskClient(ctx)
	if err != nil {
		return nil, none, err
	}
	// A client of a cluster reads the task's results from the store the
	// workers write: opening it checks that it is theirs (sameStoreAsWorkers)
	// before the task starts, with or without a project to upload.
	if f.cfg.addressSet {
		if _, err := f.Store(ctx); err != nil {
			return nil, none, err
		}
	}
	if o.Dir != "" {
		var files []workspace.File
		if in.InputSnapshot, files, err = uploadDir(ctx, f, o.Dir); err != nil {
			return nil, none, err
		}
		if in, err = judgedByUsersTests(in, files); err != nil {
			return nil, none, err
		}
		in.Setup = projectSetup(o, files)
		announceUsersTests(f.IO.ErrOut, in, files)
	}
	if in.Setup != "" {
		fmt.Fprintf(f.IO.ErrOut, "setup: %s runs before the model starts (--no-setup skips it)\n", termsafe.Clip(in.Setup, 120))
	}
	if ok, err := c.EnsureSearchAttributes(ctx); err != nil {
		slog.Debug("search attributes unavailable; the Web UI list will not filter by phase", "error", err)
	} else {
		in.SearchAttributes = ok
	}
	project, err := absDir(o.Dir)
	if err != nil {
		return nil, none, err
	}
	start := taskclient.StartOptions{Dir: project, ID: taskclient.IDFor(in.Task)}
	if in.Notify, err = saveTargets(ctx, f, start.ID, targets); err != nil {
		return nil, none, err
	}
	run, err := c.Start(ctx, in, start)
	return c, run, err
}

// taskLanguage is the language --lang names, or with auto (the default)
// the one detected from the --dir project's root files, its test command
// and the task's words; reason says why, for a detected one.
func taskLanguage(o RunOptions) (l lang.Language, reason string, err error) {
	name := strings.TrimSpace(o.Lang)
	if name != "" && !strings.EqualFold(name, "auto") {
		if l, err = languages.Lookup(name); err != nil {
			return l, "", usageError("--lang %q: unknown language (want one of %s, or auto)", name, languages.List())
		}
		return l, "", nil
	}
	var root []string
	if o.Dir != "" {
		entries, err := os.ReadDir(o.Dir)
		if err != nil {
			return l, "", usageError("--dir: %v", err)
		}
		for _, e := range entries {
			root = append(root, e.Name())
		}
	}
	d := languages.Detect(root, o.TestCmd, o.Task)
	return d.Language, d.Reason, nil
}

func taskInput(o RunOptions) (workflows.TaskInput, error) {
	if o.Task == "" {
		return workflows.TaskInput{}, usageError("the task text is empty")
	}
	if o.MaxIterations < 1 {
		return workflows.TaskInput{}, usageError("--max-iterations must be at least 1")
	}
	l, _, err := taskLanguage(o)
	if err != nil {
		return workflows.TaskInput{}, err
	}
	switch o.Policy {
	case workflows.PolicyWarn, workflows.PolicyDeny, workflows.PolicyAsk, workflows.PolicyAllow:
	default:
		return workflows.TaskInput{}, usageError("--policy %q: want warn, deny, ask or allow", o.Policy)
	}
	if _, err := policy.ParseAllow(strings.Join(o.Allow, ",")); err != nil {
		return workflows.TaskInput{}, usageError("--allow: %v", err)
	}
	for _, g := range o.Protect {
		if err := integrity.ValidGlob(g); err != nil {
			return workflows.TaskInput{}, usageError("--protect: %v", err)
		}
	}
	if math.IsNaN(o.BudgetUSD) || math.IsInf(o.BudgetUSD, 0) || o.BudgetUSD < 0 {
		return workflows.TaskInput{}, usageError("--budget-usd %v: want an amount of dollars, 0 (no limit) or more", o.BudgetUSD)
	}
	for _, name := range o.Fallback {
		if _, err := llm.ParseSpec(name); err != nil {
			return workflows.TaskInput{}, usageError("--fallback: %v", err)
		}
	}
	if o.BudgetUSD > 0 {
		for _, name := range append([]string{o.Model}, o.Fallback...) {
			if spec, err := llm.ParseSpec(name); name != "" && err == nil {
				if _, ok := o.Prices.Of(spec); !ok {
					return workflows.TaskInput{}, usageError("--budget-usd: the price of %s is unknown, so its cost is too and a dollar budget is never reached; use --budget-tokens, or give its price in the configuration file ([prices])", spec.Model)
				}
			}
		}
	}
	if o.BudgetTokens < 0 || o.ApprovalTimeout <= 0 {
		return workflows.TaskInput{}, usageError("--budget-tokens must not be negative and --approval-timeout must be positive")
	}
	if o.MaxTurns < 0 || o.ContextTokens < 0 || o.MaxOutputTokens < 0 {
		return workflows.TaskInput{}, usageError("--max-turns, --context-tokens and --max-output-tokens must not be negative")
	}
	if o.NoSetup && strings.TrimSpace(o.Setup) != "" {
		return workflows.TaskInput{}, usageError("--setup and --no-setup: give one or the other")
	}
	if (o.SetupGiven || strings.TrimSpace(o.Setup) != "") && o.Dir == "" {
		return workflows.TaskInput{}, usageError("--setup needs --dir: a setup prepares a project's files, and a task from scratch has none; give the project with --dir, or leave --setup out")
	}
	if strings.ContainsRune(o.Setup, 0) {
		return workflows.TaskInput{}, usageError("--setup: the command holds a NUL byte")
	}
	if len(o.AllowCommands) > 0 && !o.ApproveCommands {
		return workflows.TaskInput{}, usageError("--allow-command needs --approve-commands: without it every command runs without asking")
	}
	for _, p := range o.AllowCommands {
		if strings.TrimSpace(p) == "" {
			return workflows.TaskInput{}, usageError("--allow-command: an empty prefix would allow every command")
		}
	}
	return workflows.TaskInput{
		Task:            o.Task,
		Language:        l.Name,
		TestCmd:         o.TestCmd,
		Setup:           strings.TrimSpace(o.Setup),
		MaxIterations:   o.MaxIterations,
		Model:           o.Model,
		Fallback:        o.Fallback,
		ApprovePlan:     o.ApprovePlan,
		Policy:          o.Policy,
		Allow:           o.Allow,
		BudgetTokens:    o.BudgetTokens,
		BudgetUSD:       o.BudgetUSD,
		AskWhenStuck:    o.AskWhenStuck,
		ApprovalTimeout: o.ApprovalTimeout,
		Protect:         o.Protect,
		AllowTestEdits:  o.AllowTestEdits,
		Agent: workflows.AgentLimits{
			MaxTurns:        o.MaxTurns,
			ContextTokens:   o.ContextTokens,
			MaxOutputTokens: o.MaxOutputTokens,
		},
		ApproveCommands: o.ApproveCommands,
		CommandAllow:    o.AllowCommands,
	}, nil
}

// projectSetup is the setup a task on the project's files runs: --setup's
// command, else the project's SetupScript run with sh, unless --no-setup
// or an empty --setup says none.
func projectSetup(o RunOptions, files []workspace.File) string {
	if cmd := strings.TrimSpace(o.Setup); cmd != "" || o.SetupGiven || o.NoSetup {
		return cmd
	}
	if slices.ContainsFunc(files, func(f workspace.File) bool { return f.Path == activities.SetupScript }) {
		return "sh " + activities.SetupScript
	}
	return ""
}

// absDir is dir made absolute, so that resume finds the project from any
// directory; "" stays "".
func absDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--dir: %w", err)
	}
	return abs, nil
}

// uploadDir stores an existing project as the task's input snapshot.
func uploadDir(ctx context.Context, f *Factory, dir string) (string, []workspace.File, error) {
	files, summary, err := workspace.LoadDir(dir, workspace.LoadOptions{})
	if err != nil {
		return "", nil, usageError("--dir %s: %v", dir, err)
	}
	st, err := f.Store(ctx)
	if err != nil {
		return "", nil, err
	}
	id, err := st.PutSnapshot(ctx, files)
	if err != nil {
		return "", nil, usageError("--dir %s: %v", dir, err)
	}
	fmt.Fprintf(f.IO.ErrOut, "uploaded %s: %d files, %d bytes; %s\n", dir, summary.Files, summary.Bytes, skippedText(summary))
	reportUnsafeNames(f.IO.ErrOut, summary.Skipped)
	return id, files, nil
}

// skippedText counts what an upload left out, by reason.
func skippedText(s workspace.Summary) string {
	if len(s.Skipped) == 0 {
		return "0 skipped"
	}
	var reasons []string
	for _, sk := range s.Skipped {
		if !slices.Contains(reasons, string(sk.Reason)) {
			reasons = append(reasons, string(sk.Reason))
		}
	}
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", s.Count(workspace.SkipReason(r)), r)
	}
	return fmt.Sprintf("%d skipped (%s)", len(s.Skipped), strings.Join(reasons, ", "))
}

// judgedByUsersTests decides, once, whose tests judge a task that starts
// from a project: a test command given, or tests of the user's in the
// project that the language's own command runs, make the user's tests the
// judge; only a project without either leaves the tests to the model.
// Every later reader (the prompts, status, the final line) follows from
// the test command this sets, through Status.TestsByModel.
func judgedByUsersTests(in workflows.TaskInput, files []workspace.File) (workflows.TaskInput, error) {
	if in.TestCmd != "" {
		return in, nil
	}
	l, err := languages.Lookup(in.Language)
	if err != nil {
		return in, usageError("--lang: %v", err)
	}
	if integrity.Protect(files, integrity.Options{Protect: in.Protect}).HasTests(l.IsTestSource) {
		in.TestCmd = l.Tests.CommandLine()
	}
	return in, nil
}

// unsafeNamesShown bounds the skipped names upload lists one by one.
const unsafeNamesShown = 10

// reportUnsafeNames names the files left out because their names cannot be
// written faithfully (a control character or escape sequence, bytes that
// are not UTF-8, too long) or would leave the workspace: unlike ignored
// files, the person may expect them in the task. Names are shown quoted
// (%q escapes every control and format character), so an escape sequence
// in one is not played by the terminal.
func reportUnsafeNames(w io.Writer, skipped []workspace.Skipped) {
	n := 0
	for _, sk := range skipped {
		if sk.Reason != workspace.SkipUnsafeName {
			continue
		}
		if n++; n <= unsafeNamesShown {
			fmt.Fprintf(w, "skipped %q: the name holds a control character or escape sequence, is not UTF-8 or is too long; rename it to include it\n", truncate.Head(sk.Path, 200))
		}
	}
	if n > unsafeNamesShown {
		fmt.Fprintf(w, "skipped %d more files for their names\n", n-unsafeNamesShown)
	}
}

// taskFailure keeps the workflow's own message, written for people.
func taskFailure(err error) error {
	if errors.Is(err, taskclient.ErrNotFound) {
		return fmt.Errorf("find task: %w", err)
	}
	var failed *taskclient.FailedError
	switch {
	case errors.As(err, &failed) && failed.Cancelled:
		return fmt.Errorf("%w: the task was cancelled", errTaskFailed)
	case errors.As(err, &failed):
		return fmt.Errorf("%w: %s", errTaskFailed, failed.Message)
	}
	return fmt.Errorf("%w: %v", errTaskFailed, err)
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

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
