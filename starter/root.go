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
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/termsafe"
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

// factory builds dependencies on first use, so a command pays only for
// what it touches and tests can replace any of them.
type factory struct {
	cfg    config
	stdout io.Writer
	stderr io.Writer

	client client.Client
	store  store.Store
	// ran is set once a command's own code starts; an error before that
	// came from cobra's argument checks and is a usage error.
	ran bool
	// local is set when this process hosts the embedded services.
	local bool
	// connected is set once local mode found the data dir's server.
	connected bool
	// verbose also shows the logs on stderr.
	verbose  bool
	closeLog func()
}

func (f *factory) Client(ctx context.Context) (client.Client, error) {
	if f.client != nil {
		return f.client, nil
	}
	if f.useEmbedded() && !f.local {
		if err := f.connectLocal(ctx); err != nil {
			return nil, err
		}
	}
	dialCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.DialContext(dialCtx, client.Options{
		HostPort:  f.cfg.TemporalAddress,
		Namespace: f.cfg.Namespace,
		Logger:    sdklog.NewStructuredLogger(slog.Default()),
	})
	if err != nil && f.useEmbedded() {
		return nil, fmt.Errorf("%w: cannot reach the local server at %s (%v); see `autocoder dev status` and %s",
			errUnavailable, f.cfg.TemporalAddress, err, f.cfg.logFile())
	}
	if err != nil {
		return nil, fmt.Errorf("%w: cannot reach Temporal at %s (%v).\n"+
			"Set %s to your Temporal frontend (host:port), or unset it for local mode",
			errUnavailable, f.cfg.TemporalAddress, err, envTemporalAddress)
	}
	f.client = c
	return c, nil
}

func (f *factory) Store(ctx context.Context) (store.Store, error) {
	if f.store != nil {
		return f.store, nil
	}
	s, err := store.Open(ctx, store.Config{DatabaseURL: f.cfg.DatabaseURL, SQLitePath: f.cfg.sqlitePath()})
	if err != nil {
		return nil, fmt.Errorf("%w: open store: %v", errUnavailable, err)
	}
	f.store = s
	return s, nil
}

func (f *factory) closeClient() {
	if f.client != nil {
		f.client.Close()
		f.client = nil
	}
}

func (f *factory) Close() {
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
	f := &factory{cfg: configFromEnv(), stdout: os.Stdout, stderr: os.Stderr}
	defer f.Close()
	return execute(ctx, f, os.Args[1:])
}

// execute runs one command line with f's dependencies and streams.
func execute(ctx context.Context, f *factory, args []string) int {
	root := newRootCmd(f)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && !f.ran && !errors.Is(err, errUsage) {
		err = fmt.Errorf("%w: %v (see autocoder --help)", errUsage, err)
	}
	code := exitCode(err, ctx)
	if err != nil && code != exitOK && code != exitWaiting {
		// Errors may quote what a model or a test printed.
		fmt.Fprintln(f.stderr, "autocoder:", termsafe.Text(err.Error()))
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

func newRootCmd(f *factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "autocoder",
		Short:         "A durable, self-improving autonomous coding agent",
		Long:          "autocoder plans, writes, tests and repairs code in a sandbox, as a durable Temporal workflow per task.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// cobra checks required flags only after this hook: check them
			// first, so that a missing one counts as a usage error.
			if err := cmd.ValidateRequiredFlags(); err != nil {
				return err
			}
			f.ran = true
			// A worker is a service: its logs are its output.
			f.closeLog = f.setupLogging(f.verbose || cmd.Name() == "worker")
			return nil
		},
	}
	root.PersistentFlags().BoolVarP(&f.verbose, "verbose", "v", false, "also show the logs (SDK, server, sandbox) on stderr; they are always in <data dir>/"+logFileName)
	root.SetOut(f.stdout)
	root.SetErr(f.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		cmd.PrintErrln(cmd.UsageString())
		return fmt.Errorf("%w: %v", errUsage, err)
	})
	root.AddCommand(newRunCmd(f), newStatusCmd(f), newWatchCmd(f), newListCmd(f),
		newApproveCmd(f), newRejectCmd(f), newFeedbackCmd(f), newCancelCmd(f),
		newRollbackCmd(f), newExportCmd(f), newResumeCmd(f), newWorkerCmd(f), newDevCmd(f), newLessonsCmd(f))
	return root
}

// exitCode is the one place errors become exit codes.
func exitCode(err error, ctx context.Context) int {
	var notFound *serviceerror.NotFound
	var canceled *temporal.CanceledError
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil:
		return exitInterrupted
	case errors.Is(err, errWaiting):
		return exitWaiting
	case errors.Is(err, errUsage):
		return exitUsage
	case errors.As(err, &notFound), errors.Is(err, store.ErrNotFound):
		return exitNotFound
	case errors.Is(err, errUnavailable):
		return exitUnavailable
	case errors.Is(err, errTaskFailed), errors.As(err, &canceled):
		return exitTaskFailed
	default:
		return exitTaskFailed
	}
}

func usageError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
