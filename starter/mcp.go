package starter

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/mcp"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/workflows"
)

// MCPOptions are mcp's arguments.
type MCPOptions struct {
	// Listen is the address of the streamable HTTP transport; empty for
	// stdio.
	Listen string
}

func NewCmdMCP(f *Factory, runF func(*MCPOptions) error) *cobra.Command {
	var o MCPOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve tasks to an IDE over the Model Context Protocol (stdio; --listen for HTTP)",
		Long: "Serve autocoder's tasks over the Model Context Protocol, on stdin and stdout (or streamable HTTP with\n" +
			"--listen): tools to start a task, follow it with progress notifications, read its status and\n" +
			"transcript, answer its questions, give feedback, cancel, roll back, and take its result as a patch.\n" +
			"Tasks run in the local server (or on TEMPORAL_ADDRESS) and outlive the session: another session,\n" +
			"the CLI or the Web UI picks them up by id. Register it in an IDE as the command `autocoder mcp`.",
		Example: `  autocoder mcp                          # stdio, as an IDE starts it
  autocoder mcp --listen 127.0.0.1:8765  # streamable HTTP at http://127.0.0.1:8765/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(&o)
			}
			return serveMCP(cmd.Context(), f, o)
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	return cmd
}

func serveMCP(ctx context.Context, f *Factory, o MCPOptions) error {
	// Reading and answering need a server whose worker runs tasks; a start
	// asks for this shell's settings (mcpTasks.Start).
	f.need = needWorker
	t := &mcpTasks{f: f}
	srv := mcp.New(mcp.Options{Tasks: t, View: mcpView{}, Version: buildVersion()})
	if o.Listen == "" {
		// stdout carries the protocol: nothing else may write there.
		return mcp.ServeStdio(ctx, srv, &sdk.IOTransport{Reader: io.NopCloser(f.IO.In), Writer: nopWriteCloser{f.IO.Out}})
	}
	tokenPath := filepath.Join(f.cfg.DataDir, "mcp-token")
	token, err := mcpToken(tokenPath)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return usageError("--listen %s: %v", o.Listen, err)
	}
	hs := &http.Server{Handler: mcp.HTTPHandler(srv, token), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(shutdown)
	}()
	fmt.Fprintf(f.IO.ErrOut, "serving MCP (streamable HTTP) at http://%s/\n", ln.Addr())
	fmt.Fprintf(f.IO.ErrOut, "clients send the header \"Authorization: Bearer TOKEN\", TOKEN being the content of %s\n", tokenPath)
	if host, _, _ := net.SplitHostPort(o.Listen); !isLoopback(host) {
		fmt.Fprintln(f.IO.ErrOut, "warning: plain HTTP beyond this machine shows the token to the network; put TLS in front of it")
	}
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve MCP: %w", err)
	}
	return nil
}

// buildVersion is the module version the binary was built from, "(devel)"
// for a build from a work tree.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpTasks gives the MCP tools the commands' own code over the factory's
// task client and store. The factory is not safe for concurrent use, and
// tool calls come at once: mu guards it.
type mcpTasks struct {
	f  *Factory
	mu sync.Mutex
}

// client is the task client; in local mode, one whose server went away
// (it stopped after an idle while) is dropped, so that the next call
// finds or starts the data dir's server again.
func (t *mcpTasks) client(ctx context.Context) (TaskClient, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.f.TaskClient(ctx)
}

// call runs fn with the task client, once more on a fresh connection when
// a local server did not answer.
func call[T any](ctx context.Context, t *mcpTasks, fn func(TaskClient) (T, error)) (T, error) {
	var zero T
	c, err := t.client(ctx)
	if err != nil {
		return zero, err
	}
	v, err := fn(c)
	if !errors.Is(err, taskclient.ErrUnreachable) || !t.f.useEmbedded() {
		return v, err
	}
	t.reconnect()
	if c, err = t.client(ctx); err != nil {
		return zero, err
	}
	return fn(c)
}

func (t *mcpTasks) reconnect() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.f.closeClient()
	t.f.connected = false
}

// Start starts a task as `run --detach` would, on a server with this
// shell's settings; what run would say on the way becomes the notes.
func (t *mcpTasks) Start(ctx context.Context, a mcp.StartArgs) (mcp.Started, error) {
	o := RunOptions{
		Task: a.Task, Lang: orDefault(a.Language, "auto"), Dir: a.Dir, TestCmd: a.TestCmd, Model: a.Model,
		MaxIterations: a.MaxIterations, MaxTurns: a.MaxTurns, BudgetTokens: a.BudgetTokens, BudgetUSD: a.BudgetUSD,
		Policy: a.Policy, ApprovePlan: a.ApprovePlan, ApproveCommands: a.ApproveCommands, AllowCommands: a.AllowCommands,
		Setup: a.Setup, NoSetup: a.NoSetup, ApprovalTimeout: workflows.DefaultApprovalTimeout,
	}
	// An argument left out takes the configuration's value, as a flag not
	// given does.
	given := map[string]bool{"max-iterations": a.MaxIterations != 0, "max-turns": a.MaxTurns != 0,
		"budget-tokens": a.BudgetTokens != 0, "budget-usd": a.BudgetUSD != 0, "policy": a.Policy != ""}
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.f
	o.fromSettings(func(flag string) bool { return given[flag] }, f.cfg.settings)
	if f.useEmbedded() && f.need != needOwnSettings {
		// Connected for reading: check the server's settings again.
		f.closeClient()
		f.connected = false
	}
	var notes bytes.Buffer
	errOut := f.IO.ErrOut
	f.IO.ErrOut = &notes
	defer func() { f.IO.ErrOut = errOut }()
	_, run, err := startTask(ctx, f, o)
	if errors.Is(err, errUsage) {
		// Said of run's flags: name the tool's arguments instead.
		return mcp.Started{}, errors.New(argNames.Replace(err.Error()) + notesSuffix(notes.String()))
	}
	if err != nil {
		return mcp.Started{}, fmt.Errorf("%w%s", err, notesSuffix(notes.String()))
	}
	return mcp.Started{ID: run.ID, URL: f.cfg.workflowURL(run.ID), Notes: argNames.Replace(notes.String())}, nil
}

// argNames turns run's flags, as its errors and notes name them, into
// start_task's arguments.
var argNames = strings.NewReplacer("usage: ", "", "--max-iterations", "max_iterations", "--max-turns", "max_turns",
	"--lang", "language", "--dir", "dir", "--test-cmd", "test_cmd", "--model", "model", "--policy", "policy",
	"--budget-tokens", "budget_tokens", "--budget-usd", "budget_usd", "--approve-commands", "approve_commands",
	"--allow-command", "allow_commands", "--approval-timeout", "the approval timeout",
	"--setup", "setup", "--no-setup", "no_setup")

// notesSuffix adds what was said before a failed start to its error.
func notesSuffix(notes string) string {
	if notes = strings.TrimSpace(notes); notes != "" {
		return "\n" + notes
	}
	return ""
}

func (t *mcpTasks) Status(ctx context.Context, id string) (workflows.Status, error) {
	return call(ctx, t, func(c TaskClient) (workflows.Status, error) { return c.Status(ctx, id) })
}

func (t *mcpTasks) List(ctx context.Context, o taskclient.ListOptions) ([]taskclient.Task, error) {
	return call(ctx, t, func(c TaskClient) ([]taskclient.Task, error) { return c.List(ctx, o) })
}

func (t *mcpTasks) Approve(ctx context.Context, id string, s workflows.ApproveSignal) error {
	return t.send(ctx, func(c TaskClient) error { return c.Approve(ctx, id, s) })
}

func (t *mcpTasks) Reject(ctx context.Context, id string, s workflows.RejectSignal) error {
	return t.send(ctx, func(c TaskClient) error { return c.Reject(ctx, id, s) })
}

func (t *mcpTasks) Feedback(ctx context.Context, id string, s workflows.FeedbackSignal) error {
	return t.send(ctx, func(c TaskClient) error { return c.Feedback(ctx, id, s) })
}

func (t *mcpTasks) Answer(ctx context.Context, id string, a workflows.Answer, text string) error {
	return t.send(ctx, func(c TaskClient) error { return c.Answer(ctx, id, a, text) })
}

func (t *mcpTasks) Cancel(ctx context.Context, id string, s workflows.CancelSignal) error {
	return t.send(ctx, func(c TaskClient) error { return c.Cancel(ctx, id, s) })
}

func (t *mcpTasks) CancelNow(ctx context.Context, id string) error {
	return t.send(ctx, func(c TaskClient) error { return c.CancelNow(ctx, id) })
}

func (t *mcpTasks) send(ctx context.Context, fn func(TaskClient) error) error {
	_, err := call(ctx, t, func(c TaskClient) (struct{}, error) { return struct{}{}, fn(c) })
	return err
}

func (t *mcpTasks) Rollback(ctx context.Context, id string, r workflows.RollbackRequest) (workflows.Status, error) {
	return call(ctx, t, func(c TaskClient) (workflows.Status, error) { return c.Rollback(ctx, id, r) })
}

func (t *mcpTasks) Transcript(ctx context.Context, id string) ([]taskclient.Conversation, error) {
	st, err := t.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	entries, err := t.f.Store(ctx)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return taskclient.ReadConversations(ctx, st.Transcripts, entries)
}

// checkpoint is the task's status and its checkpoint n (0: as export
// picks it), with the store that holds its files.
func (t *mcpTasks) checkpoint(ctx context.Context, id string, n int) (workflows.Status, workflows.Checkpoint, snapshotReader, error) {
	st, err := t.Status(ctx, id)
	if err != nil {
		return st, workflows.Checkpoint{}, nil, err
	}
	cp, err := pickCheckpoint(st, n)
	if err != nil {
		return st, cp, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	snapshots, err := t.f.Store(ctx)
	return st, cp, snapshots, err
}

func (t *mcpTasks) Patch(ctx context.Context, id string, n int) (mcp.Patch, error) {
	st, cp, snapshots, err := t.checkpoint(ctx, id, n)
	if err != nil {
		return mcp.Patch{}, err
	}
	var diff, review bytes.Buffer
	if err := writeCheckpointPatch(ctx, &diff, false, st, cp, snapshots); err != nil {
		return mcp.Patch{}, err
	}
	reviewWarnings(&review, cp)
	return mcp.Patch{Checkpoint: cp.N, Diff: diff.String(), Review: review.String()}, nil
}

func (t *mcpTasks) WriteFiles(ctx context.Context, id string, n int, dir string) (int, error) {
	st, cp, _, err := t.checkpoint(ctx, id, n)
	if err != nil {
		return 0, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return writeSnapshot(ctx, t.f, id, st, cp.SnapshotID, dir, true)
}

// mcpView renders tasks as the commands print them.
type mcpView struct{}

func (mcpView) Status(id string, st workflows.Status) string {
	var b bytes.Buffer
	printStatus(&b, id, st)
	return b.String()
}

func (mcpView) Place(st workflows.Status) string     { return plainLine(st) }
func (mcpView) Progress(st workflows.Status) float64 { return progressOf(st) }

func (mcpView) Message(m llm.Message) string {
	var b bytes.Buffer
	(&transcriptPrinter{w: &b}).message(m)
	return b.String()
}

// mcpToken is the bearer token HTTP clients of `autocoder mcp` send: made
// once, kept in path readable by its owner alone, so an IDE's setting
// stays valid across restarts.
func mcpToken(path string) (string, error) {
	if data, err := os.ReadFile(path); err == nil {
		fi, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("mcp token: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("mcp token %s: others may read it; run chmod 600 %s", path, path)
		}
		if token := strings.TrimSpace(string(data)); len(token) >= 32 {
			return token, nil
		}
		return "", fmt.Errorf("mcp token %s: too short (want 32 characters or more); remove it to make a new one", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("mcp token: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("mcp token: %w", err)
	}
	token := hex.EncodeToString(buf)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("mcp token: %w", err)
	}
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("mcp token: %w", err)
	}
	return token, nil
}

// isLoopback reports whether host names this machine alone.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
