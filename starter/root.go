// Package starter is the autocoder command line: cobra commands over a
// factory of lazily built dependencies.
package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	conf "github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

// Exit codes, documented in the README. Errors map to them only in exitCode.
const (
	exitOK          = 0
	exitTaskFailed  = 1
	exitUsage       = 2
	exitUnavailable = 3 // Temporal, the store or the sandbox cannot be reached
	exitNotFound    = 4
	exitWaiting     = 5 // watch stopped at an approval gate
	exitInterrupted = 130
)

// Error kinds the commands return; exitCode maps them.
var (
	errUsage       = errors.New("usage")
	errUnavailable = errors.New("unavailable")
	errTaskFailed  = errors.New("task failed")
)

// IOStreams are a command's input and outputs, and whether each is a
// terminal (which decides redrawn lines, inline questions and colour).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	InTTY, OutTTY, ErrTTY bool
}

// SystemIO are the process's own streams.
func SystemIO() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		InTTY: isTerminal(os.Stdin), OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr)}
}

// Factory builds a command's dependencies on first use, so a command pays
// only for what it touches; tests replace TaskClient and Store.
type Factory struct {
	IO  IOStreams
	cfg config

	// TaskClient reaches the tasks; Store opens the store.
	TaskClient func(context.Context) (TaskClient, error)
	Store      func(context.Context) (store.Store, error)

	sdk client.Client
	// metrics, set before a worker's client is dialled, receive the SDK's
	// metrics and autocoder's (observe.go).
	metrics *metrics.Registry
	store   store.Store
	// ran is set once a command's own code starts; an error before that
	// came from cobra's argument checks and is a usage error.
	ran bool
	// local is set when this process hosts the embedded services; worker
	// when it is a cluster's worker.
	local, worker bool
	// connected is set once local mode found the data dir's server;
	// settingsless when that server is settings-less.
	connected    bool
	settingsless bool
	// need is what the command needs of the local server (serverFits);
	// settingsIgnored are settings the command sets another way.
	need            serverNeed
	settingsIgnored []string
	// Executable is this program's path (os.Executable): a worker's
	// sandboxes run it as their egress forwarder unless sandbox.forwarder
	// names another.
	Executable func() (string, error)
	// Getenv, when set, is the environment the configuration is resolved
	// from (conf.Environ); configFile is --config.
	Getenv     func(string) string
	configFile string
	// confOptions resolved the configuration; a worker resolves it again
	// as the file changes (watchConfig). nil: built by hand.
	confOptions *conf.Options
	// verbose also shows the logs on stderr.
	verbose  bool
	closeLog func()
}

// TaskClient is what the commands ask of the tasks (taskclient.Client).
type TaskClient interface {
	Start(ctx context.Context, in workflows.TaskInput, o taskclient.StartOptions) (taskclient.Started, error)
	EnsureSearchAttributes(ctx context.Context) (bool, error)
	Status(ctx context.Context, id string) (workflows.Status, error)
	ProjectDir(ctx context.Context, id string) (string, error)
	Wait(ctx context.Context, id string) (workflows.TaskResult, error)
	ModelCall(ctx context.Context, id string) (*taskclient.ModelCall, error)
	Retries(ctx context.Context, id string) ([]taskclient.Retry, error)
	List(ctx context.Context, o taskclient.ListOptions) ([]taskclient.Task, error)
	Reachable(ctx context.Context) error
	Approve(ctx context.Context, id string, s workflows.ApproveSignal) error
	Reject(ctx context.Context, id string, s workflows.RejectSignal) error
	Feedback(ctx context.Context, id string, s workflows.FeedbackSignal) error
	Cancel(ctx context.Context, id string, s workflows.CancelSignal) error
	CancelNow(ctx context.Context, id string) error
	Answer(ctx context.Context, id string, a workflows.Answer, text string) error
	Rollback(ctx context.Context, id string, r workflows.RollbackRequest) (workflows.Status, error)
	// WorkerStores are the stores the workers name (taskclient.WorkerIdentity).
	WorkerStores(ctx context.Context) (stores []string, unnamed int, err error)
}

// NewFactory returns a factory with cfg and streams that builds the real
// dependencies. Settings cfg leaves out are the defaults; with Getenv set,
// the command line's configuration replaces cfg once flags are parsed.
func NewFactory(cfg config, io IOStreams) *Factory {
	if cfg.settings == nil {
		cfg.settings = conf.Defaults()
	}
	f := &Factory{IO: io, cfg: cfg}
	f.TaskClient = func(ctx context.Context) (TaskClient, error) {
		c, err := f.temporalClient(ctx)
		if err != nil {
			return nil, err
		}
		return taskclient.New(c, f.cfg.Namespace), nil
	}
	f.Store = f.openStore
	f.Executable = os.Executable
	return f
}

// temporalClient is the Temporal connection, which only the worker wiring
// and the task client use.
func (f *Factory) temporalClient(ctx context.Context) (client.Client, error) {
	if f.sdk != nil {
		return f.sdk, nil
	}
	if f.useEmbedded() && !f.local {
		if err := f.connectLocal(ctx); err != nil {
			return nil, err
		}
	}
	c, err := dial(ctx, f.cfg.TemporalAddress, f.cfg.Namespace, f.metrics.TemporalHandler())
	if err != nil && f.useEmbedded() {
		return nil, fmt.Errorf("%w: cannot reach the local server at %s (%v); see `autocoder dev status` and %s",
			errUnavailable, f.cfg.TemporalAddress, err, f.cfg.logFile())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: cannot reach Temporal at %s (%v).\n"+
			"Set %s (or temporal.address in the configuration file) to your Temporal frontend (host:port), or unset it for local mode",
			errUnavailable, f.cfg.TemporalAddress, err, envTemporalAddress)
	}
	f.sdk = c
	return c, nil
}

// dial connects to the Temporal frontend at hostPort; the SDK's metrics go
// to m (nil: nowhere).
func dial(ctx context.Context, hostPort, namespace string, m client.MetricsHandler) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return client.DialContext(ctx, client.Options{
		HostPort:       hostPort,
		Namespace:      namespace,
		Logger:         sdklog.NewStructuredLogger(slog.Default()),
		MetricsHandler: m,
	})
}

func (f *Factory) openStore(ctx context.Context) (store.Store, error) {
	if f.store != nil {
		return f.store, nil
	}
	s, err := store.Open(ctx, store.Config{DatabaseURL: f.cfg.DatabaseURL, SQLitePath: f.cfg.sqlitePath()})
	if err != nil {
		return nil, fmt.Errorf("%w: open store: %v", errUnavailable, err)
	}
	if f.cfg.addressSet && !f.worker {
		if err := f.sameStoreAsWorkers(ctx, s); err != nil {
			s.Close()
			return nil, err
		}
	}
	f.store = s
	return s, nil
}

func (f *Factory) closeClient() {
	if f.sdk != nil {
		f.sdk.Close()
		f.sdk = nil
	}
}

func (f *Factory) Close() {
	f.closeClient()
	if f.closeLog != nil {
		f.closeLog()
	}
	if f.store != nil {
		if err := f.store.Close(); err != nil {
			slog.Warn("close store", "error", err)
		}
	}
}

// Execute runs the command line and returns the process exit code.
func Execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go exitAfterInterrupt(ctx, stop, interruptGrace, os.Exit)
	f := NewFactory(config{}, SystemIO())
	f.Getenv = conf.Environ
	defer f.Close()
	return execute(ctx, f, os.Args[1:])
}

// execute runs one command line with f's dependencies and streams.
func execute(ctx context.Context, f *Factory, args []string) int {
	root := newRootCmd(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil && !f.ran && !errors.Is(err, errUsage) {
		err = fmt.Errorf("%w: %v (see autocoder --help)", errUsage, err)
	}
	if errors.Is(err, taskclient.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		err = notFoundError(cmd, err)
	}
	code := exitCode(err, ctx)
	if err != nil && code != exitOK && code != exitWaiting {
		// Errors may quote what a model or a test printed.
		fmt.Fprintln(f.IO.ErrOut, "autocoder:", termsafe.Text(err.Error()))
	}
	return code
}

// interruptGrace is how long a command may take to stop after SIGINT or
// SIGTERM; more than a worker's graceful stop, which waits for running
// activities up to 30s.
const interruptGrace = 45 * time.Second

// exitAfterInterrupt makes a signal end the process even when a command is
// stuck in a call that ignores its context: once ctx ends, a second signal
// kills the process at once, and exit is called after grace. When the
// command returns first, the process exits before grace is up.
func exitAfterInterrupt(ctx context.Context, stop func(), grace time.Duration, exit func(int)) {
	<-ctx.Done()
	stop() // restores the default action of the signals
	time.Sleep(grace)
	fmt.Fprintf(os.Stderr, "autocoder: still not stopped %s after the interrupt; exiting\n", grace)
	exit(exitInterrupted)
}

func newRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "autocoder",
		Short:         "A durable, self-improving autonomous coding agent",
		Long:          "autocoder plans, writes, tests and repairs code in a sandbox, as a durable Temporal workflow per task.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			// cobra checks required flags only after this hook: check them
			// first, so that a missing one counts as a usage error.
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return err
			}
			if err := checkIDArg(cmd, args); err != nil {
				return err
			}
			if err := f.loadConfig(cmd); err != nil {
				return err
			}
			f.ran = true
			// A worker is a service: its logs are its output.
			f.closeLog = f.setupLogging(f.verbose || cmd.Name() == "worker")
			return nil
		},
	}
	root.PersistentFlags().BoolVarP(&f.verbose, "verbose", "v", false, "also show the logs (SDK, server, sandbox) on stderr; they are always in <data dir>/"+logFileName)
	root.PersistentFlags().StringVar(&f.configFile, "config", "", "configuration file (default: ./"+conf.ProjectFile+" or --dir's, else $XDG_CONFIG_HOME/autocoder/config.toml)")
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		cmd.PrintErrln(cmd.UsageString())
		return fmt.Errorf("%w: %v", errUsage, err)
	})
	root.AddCommand(NewCmdRun(f, nil), NewCmdStatus(f, nil), NewCmdWatch(f, nil), NewCmdList(f, nil),
		NewCmdApprove(f, nil), NewCmdReject(f, nil), NewCmdFeedback(f, nil), NewCmdCancel(f, nil),
		NewCmdRollback(f, nil), NewCmdExport(f, nil), NewCmdResume(f, nil), NewCmdTranscript(f, nil),
		NewCmdWorker(f, nil), NewCmdDev(f, nil), NewCmdLessons(f, nil), NewCmdConfig(f, nil), NewCmdMCP(f, nil), NewCmdVersions(f, nil),
		NewCmdTemporal(f, nil))
	explainArgErrors(root)
	return root
}

// explainArgErrors words every command's argument-count errors for a
// person: what the command needs, by the names its usage gives them,
// instead of cobra's "accepts 1 arg(s), received 0".
func explainArgErrors(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		explainArgErrors(c)
	}
	check := cmd.Args
	if check == nil {
		return
	}
	cmd.Args = func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			needs := strings.Join(strings.Fields(c.Use)[1:], " ")
			got := "no argument"
			if len(args) > 0 {
				got = fmt.Sprintf("%d: %s", len(args), strings.Join(args, " "))
			}
			if needs == "" {
				return fmt.Errorf("%w: %s takes no argument (got %s); see %s --help", errUsage, c.CommandPath(), got, c.CommandPath())
			}
			return fmt.Errorf("%w: %s takes %s (got %s); see %s --help", errUsage, c.CommandPath(), needs, got, c.CommandPath())
		}
		return nil
	}
}

// exitCode is the one place errors become exit codes.
func exitCode(err error, ctx context.Context) int {
	var failed *taskclient.FailedError
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		return exitInterrupted
	case errors.Is(err, errWaiting):
		return exitWaiting
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.Is(err, taskclient.ErrNotFound), errors.Is(err, store.ErrNotFound):
		return exitNotFound
	case errors.Is(err, errUnavailable):
		return exitUnavailable
	case errors.Is(err, errTaskFailed), errors.As(err, &failed):
		return exitTaskFailed
	default:
		return exitTaskFailed
	}
}

// checkIDArg refuses an empty or blank ID to every command whose first
// argument is one (its Use says "ID"), before it reaches Temporal or the
// store, whose answers would not say what was wrong.
func checkIDArg(cmd *cobra.Command, args []string) error {
	if !takesID(cmd) || len(args) == 0 || strings.TrimSpace(args[0]) != "" {
		return nil
	}
	what, lister := idKind(cmd)
	return usageError("the %s id is empty (%s); %s shows the ids", what, cmd.UseLine(), lister)
}

// takesID says whether the command's first argument is an id.
func takesID(cmd *cobra.Command) bool {
	use := strings.Fields(cmd.Use)
	return len(use) >= 2 && use[1] == "ID"
}

// idKind names what a command's id names, and the command that lists them.
func idKind(cmd *cobra.Command) (what, lister string) {
	if p := cmd.Parent(); p != nil && p.Name() == "lessons" {
		return "lesson", "autocoder lessons list"
	}
	return "task", "autocoder list"
}

// notFoundError says which id named nothing, in the user's words rather
// than the server's ("workflow not found for ID").
func notFoundError(cmd *cobra.Command, err error) error {
	args := cmd.Flags().Args()
	if cmd == nil || !takesID(cmd) || len(args) == 0 {
		return err
	}
	what, lister := idKind(cmd)
	return &quietCause{msg: fmt.Sprintf("no %s %s here; %s shows the %ss there are", what, args[0], lister, what), cause: err}
}

func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
