package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/owner"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/sandbox"
)

const (
	// startLockFD is where a started background server finds the start lock
	// (the first of exec.Cmd.ExtraFiles).
	startLockFD = 3
	// serverStartTimeout bounds waiting for a local server to start.
	serverStartTimeout = 2 * time.Minute
	// stopTimeout bounds waiting for `dev stop`.
	stopTimeout = time.Minute
	// reapInterval is how often the local server removes the sandbox
	// containers of dead owners (it also does at start), so that a crash
	// leaves nothing behind for long.
	reapInterval = 10 * time.Minute
)

// connectLocal points the factory at the data dir's local server, starting
// one in the background when none runs. Of clients starting at once, the
// one holding the start lock starts the server and hands the lock to it;
// the others wait for the lock, then find the address file. A server whose
// settings do not fit the command's is restarted or refused (serverFits).
func (f *Factory) connectLocal(ctx context.Context) error {
	if f.connected {
		return nil
	}
	dir := f.cfg.DataDir
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%w: create data dir: %v", errUnavailable, err)
	}
	// Before reading the address: a server deciding it is idle sees this.
	if err := devserver.Touch(dir); err != nil {
		return fmt.Errorf("%w: %v", errUnavailable, err)
	}
	ctx, cancel := context.WithTimeout(ctx, serverStartTimeout)
	defer cancel()
	started, restarted := false, false
	var logStart int64 // where the log stood when this command started a server
	for {
		a, err := devserver.ReadAddress(dir)
		if err == nil {
			restart, err := f.serverFits(ctx, a, restarted)
			if err != nil {
				return err
			}
			if !restart {
				f.useServer(a, started)
				return nil
			}
			if err := stopServer(ctx, a); err != nil {
				return err
			}
			restarted = true
			continue
		}
		if !errors.Is(err, devserver.ErrNotRunning) {
			return fmt.Errorf("%w: %v", errUnavailable, err)
		}
		lock, err := devserver.LockStart(ctx, dir)
		if err != nil {
			return fmt.Errorf("%w: %v (see %s)", errUnavailable, err, f.cfg.logFile())
		}
		if _, err := devserver.ReadAddress(dir); err == nil {
			lock.Close()
			continue // started meanwhile: checked at the top
		}
		if started {
			lock.Close()
			return fmt.Errorf("%w: the local server did not start; the end of what it wrote to its log (%s):\n%s",
				errUnavailable, f.cfg.logFile(), logTail(f.cfg.logFile(), logStart, 5))
		}
		fmt.Fprintf(f.IO.ErrOut, "starting the local server for %s (log: %s)…\n", dir, f.cfg.logFile())
		logStart, err = f.startBackground(lock)
		lock.Close()
		if err != nil {
			return fmt.Errorf("%w: start the local server: %v", errUnavailable, err)
		}
		started = true
	}
}

// serverFits decides whether the command can use the running server a.
// A command that only reads uses any. One that follows tasks needs a
// server whose worker runs them: a settings-less server is restarted
// (restart is true). One that starts a task needs this shell's settings:
// a server with others and no open task is restarted; one that serves open
// tasks is refused, naming the settings that differ, since restarting it
// would run those tasks with this shell's settings. After one restart a
// server that still does not fit was started meanwhile by another command,
// and is refused too.
func (f *Factory) serverFits(ctx context.Context, a devserver.Address, restarted bool) (restart bool, err error) {
	if f.need == needReads {
		return false, nil
	}
	if a.Settingsless && !restarted {
		fmt.Fprintln(f.IO.ErrOut, "the local server was started by a command that only reads: restarting it with this shell's settings")
		return true, nil
	}
	var differ []string // none: a settings-less server has none to name
	if !a.Settingsless {
		if f.need == needWorker {
			return false, nil
		}
		differ = serverSettings(f.cfg.settings.Fingerprint()).differing(serverSettings(a.Settings), f.settingsIgnored...)
		if len(differ) == 0 {
			return false, nil
		}
	}
	why := differPhrase(differ) + " from this shell's"
	open, err := f.openTasksOn(ctx, a)
	if err != nil {
		return false, fmt.Errorf("%w: the local server cannot say whether it is busy, and %s: %v", errUnavailable, why, err)
	}
	if open == 0 && restarted {
		return false, &settingsError{fmt.Sprintf("another command restarted the local server meanwhile, and %s; run this again", why)}
	}
	if open > 0 {
		return false, &settingsError{fmt.Sprintf("the local server runs %d open task(s) and %s; "+
			"run this when they have ended (autocoder list --status running), or `autocoder dev stop` first "+
			"(open tasks then go on with the settings of the command that starts the next server)", open, why)}
	}
	fmt.Fprintf(f.IO.ErrOut, "the local server has no open task and %s: restarting it with this shell's settings\n", why)
	return true, nil
}

// settingslessNote says, for a command that shows an open task, that the
// server it found runs none of the task's activities; "" otherwise.
func (f *Factory) settingslessNote(id string) string {
	if !f.settingsless {
		return ""
	}
	return "the local server was started by a command that only reads and runs no model call or sandbox: " +
		"autocoder resume " + id + " from a shell with your model settings continues the task"
}

// settingsError is a server whose settings do not fit the command's. It
// exits as a usage error: the person changes the shell or the server.
type settingsError struct{ msg string }

func (e *settingsError) Error() string        { return e.msg }
func (e *settingsError) Is(target error) bool { return target == errUsage }

// openTasksOn counts the open tasks of the server a, through a connection
// of its own: the factory's is made for the server the command ends up on.
func (f *Factory) openTasksOn(ctx context.Context, a devserver.Address) (int64, error) {
	c, err := dial(ctx, a.Frontend, a.Namespace, nil)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return taskclient.New(c, a.Namespace).OpenTasks(ctx)
}

func (f *Factory) useServer(a devserver.Address, started bool) {
	f.connected = true
	f.settingsless = a.Settingsless
	f.cfg.TemporalAddress = a.Frontend
	f.cfg.Namespace = a.Namespace
	if a.UI != "" {
		f.cfg.UIURL = a.UI
	}
	if started {
		fmt.Fprintf(f.IO.ErrOut, "local server at %s, Web UI at %s\n", a.Frontend, f.cfg.UIURL)
	}
}

// startBackground starts this program as the data dir's background server,
// in a session of its own so that no signal meant for this client reaches
// it, with its output in the log file, and with this client's
// configuration file and environment. It hands the held start lock to the
// server, which releases it once it serves (or exits). For a command that
// only reads, the server is settings-less: it holds no task to this shell's
// settings, so the next command that has some replaces it.
func (f *Factory) startBackground(lock *os.File) (logStart int64, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find this program: %w", err)
	}
	dir, err := filepath.Abs(f.cfg.DataDir)
	if err != nil {
		return 0, fmt.Errorf("data dir: %w", err)
	}
	logf, err := openLog(f.cfg.logFile())
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	// Taken after openLog, which may have moved a full log aside.
	info, err := logf.Stat()
	if err != nil {
		return 0, fmt.Errorf("log: %w", err)
	}
	args := []string{"dev", "--background"}
	if f.need == needReads {
		args = append(args, "--settingsless")
	}
	// The server reads the file this client read, and inherits its
	// environment, so it resolves the same settings (and fingerprint). The
	// keys stay out of its command line and environment: a key in the file
	// is read there, and an api_key_cmd runs there, where the key is used.
	if file := f.cfg.settings.File; file != "" {
		args = append(args, "--config", file)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), envDataDir+"="+dir)
	cmd.Dir = dir // not the client's directory, which may go away
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{lock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", exe, err)
	}
	// Reaped if it exits while this client still runs, so that it is not
	// taken for alive.
	go func() { _ = cmd.Wait() }()
	return info.Size(), nil
}

func newDevStatusCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the data dir's local server: address, Web UI, pid, log file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := devserver.ReadAddress(f.cfg.DataDir)
			if errors.Is(err, devserver.ErrNotRunning) {
				return fmt.Errorf("%w: no local server runs for %s; the next command starts one", errUnavailable, f.cfg.DataDir)
			}
			if err != nil {
				return fmt.Errorf("%w: %v", errUnavailable, err)
			}
			fmt.Fprintf(f.IO.Out, "Server:   running, pid %d, since %s\nTemporal: %s (namespace %s)\nWeb UI:   %s\nData:     %s\nLog:      %s\nSettings: %s\n",
				a.PID, a.Started.Local().Format(time.DateTime), a.Frontend, a.Namespace, orDefault(a.UI, "none"), f.cfg.DataDir, a.LogFile,
				describeSettings(a))
			return nil
		},
	}
}

func newDevStopCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the data dir's local server; open tasks continue when it next starts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := devserver.ReadAddress(f.cfg.DataDir)
			if errors.Is(err, devserver.ErrNotRunning) {
				fmt.Fprintf(f.IO.ErrOut, "no local server runs for %s\n", f.cfg.DataDir)
				return nil
			}
			if err != nil {
				return fmt.Errorf("%w: %v", errUnavailable, err)
			}
			if err := stopServer(cmd.Context(), a); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "stopped the local server (pid %d)\n", a.PID)
			return nil
		},
	}
}

// stopServer asks the server a to stop and waits until it has.
func stopServer(ctx context.Context, a devserver.Address) error {
	if err := syscall.Kill(a.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("%w: stop pid %d: %v", errUnavailable, a.PID, err)
	}
	host, _ := os.Hostname()
	deadline := time.Now().Add(stopTimeout)
	for {
		if gone, _ := owner.Gone(a.Owner, host); gone {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: the local server (pid %d) did not stop within %s; see %s", errUnavailable, a.PID, stopTimeout, a.LogFile)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// reapEvery removes leaked sandbox containers every interval until ctx ends.
func reapEvery(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if n, err := sandbox.Reap(ctx); err != nil {
			slog.Warn("reap leaked sandbox containers", "error", err)
		} else if n > 0 {
			slog.Info("reaped leaked sandbox containers", "count", n)
		}
	}
}

// logTail returns, for an error message, the last n lines the log file
// got from offset on: what the server this command started wrote, not
// the lines of earlier servers that share the file. A log shorter than
// offset was moved aside meanwhile and is shown from its start.
func logTail(path string, offset int64, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if offset <= int64(len(b)) {
		b = b[offset:]
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return "(the server wrote nothing to its log)"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
