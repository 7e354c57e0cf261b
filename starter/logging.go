package starter

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

const (
	// logFileName, under the data dir, collects the logs of the SDK, the
	// local server and the sandbox, so that people see only the product's
	// own lines.
	logFileName = "autocoder.log"
	// maxLogSize is the size past which a starting server moves the log
	// aside (to autocoder.log.1), keeping one old log.
	maxLogSize = 16 << 20
)

func (c config) logFile() string { return filepath.Join(c.DataDir, logFileName) }

// openLog opens the log file for appending; lines of several processes
// interleave whole.
func openLog(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	if info, err := os.Stat(path); err == nil && info.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	return f, nil
}

// setupLogging sends slog (and so the SDK's and the server's logs) to the
// log file, and also to stderr when verbose. Without a log file, warnings
// still reach stderr. The returned close flushes nothing: writes are not
// buffered.
func (f *Factory) setupLogging(verbose bool) (closeLog func()) {
	var w io.Writer = io.Discard
	level := slog.LevelInfo
	logf, err := openLog(f.cfg.logFile())
	switch {
	case err == nil && verbose:
		w = io.MultiWriter(logf, f.IO.ErrOut)
	case err == nil:
		w = logf
	case verbose:
		w = f.IO.ErrOut
	default:
		w, level = f.IO.ErrOut, slog.LevelWarn
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
	return func() {
		if logf != nil {
			logf.Close()
		}
	}
}
