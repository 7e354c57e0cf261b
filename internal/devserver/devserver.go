// Package devserver runs a single-process Temporal server, persisted to a
// SQLite file, together with the Temporal Web UI, inside the calling process.
// It backs the embedded local mode of autocoder.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/server/temporal"
)

const (
	// DefaultFrontendPort is the port Temporal clients conventionally dial.
	DefaultFrontendPort = 7233
	// DefaultUIPort is the port the Temporal CLI dev server uses for its UI.
	DefaultUIPort = 8233
	// NoUI as Options.UIPort disables the Web UI.
	NoUI = -1
	// DefaultNamespace is registered when Options.Namespace is empty.
	DefaultNamespace = "default"
	// DefaultRetention is how long closed workflow histories are kept.
	DefaultRetention = 7 * 24 * time.Hour

	// DatabaseFileName is the SQLite file, under DataDir, holding all server state.
	DatabaseFileName = "temporal.db"
	// lockFileName guards DataDir against a second server process.
	lockFileName = "temporal.lock"

	host = "127.0.0.1"
)

var (
	// ErrPortInUse reports that a requested port cannot be bound.
	ErrPortInUse = errors.New("port in use")
	// ErrDataDirLocked reports that another server already uses the data dir.
	ErrDataDirLocked = errors.New("data dir in use by another server")
)

// SearchAttributeConflictError reports a custom search attribute that is
// already registered in the namespace with a different type.
type SearchAttributeConflictError struct {
	Name       string
	Registered enums.IndexedValueType
	Requested  enums.IndexedValueType
}

func (e *SearchAttributeConflictError) Error() string {
	return fmt.Sprintf("search attribute %q is registered as %s, requested %s", e.Name, e.Registered, e.Requested)
}

// Options configures Start. The zero value picks free ports for the frontend
// and the UI; DefaultOptions gives the conventional fixed ports.
type Options struct {
	// DataDir holds the SQLite database and the lock file. Empty means
	// $XDG_DATA_HOME/autocoder, else ~/.local/share/autocoder.
	DataDir string
	// FrontendPort is the gRPC port on 127.0.0.1; 0 picks a free port.
	FrontendPort int
	// UIPort is the Web UI port on 127.0.0.1; 0 picks a free port, NoUI disables the UI.
	UIPort int
	// Namespace is registered on first start; empty means DefaultNamespace.
	Namespace string
	// Retention applies when the namespace is first created; zero means DefaultRetention.
	Retention time.Duration
	// SearchAttributes are custom search attributes ensured at every start.
	// SQLite visibility offers a limited number of slots per type.
	SearchAttributes map[string]enums.IndexedValueType
	// Logger receives the server's warnings and errors; nil means slog.Default().
	Logger *slog.Logger
	// FallBackToFreePort picks a free port instead of failing when a fixed
	// port is taken, by another data dir's server for one: clients find
	// the port in the address file, not by convention.
	FallBackToFreePort bool

	// clusterQueueReads keeps the rate at which history reads its task
	// queues at the default sized for clusters (benchmarks' baseline).
	clusterQueueReads bool
}

// DefaultOptions returns Options with the conventional ports 7233 and 8233.
func DefaultOptions() Options {
	return Options{FrontendPort: DefaultFrontendPort, UIPort: DefaultUIPort}
}

// Server is a running embedded Temporal server. Stop it when done.
type Server struct {
	namespace    string
	frontendPort int
	uiPort       int
	dbPath       string
	log          *slog.Logger
	// serverLevel is the server's log threshold, raised during Stop.
	serverLevel *slog.LevelVar

	temporal temporal.Server
	ui       *uiserver.Server
	lock     *os.File

	stopOnce sync.Once
	stopErr  error
}

// Start starts the Temporal services and, unless disabled, the Web UI. It
// returns once the frontend accepts calls, the namespace and search attributes
// are usable, and the UI answers. ctx bounds only the startup.
func Start(ctx context.Context, opts Options) (*Server, error) {
	opts, err := resolveOptions(opts)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	lock, err := lockDataDir(opts.DataDir)
	if err != nil {
		return nil, err
	}
	s := &Server{
		namespace: opts.Namespace,
		uiPort:    NoUI,
		dbPath:    filepath.Join(opts.DataDir, DatabaseFileName),
		log:       opts.Logger,
		lock:      lock,
	}
	s.serverLevel = new(slog.LevelVar)
	s.serverLevel.Set(minServerLevel)
	if err := s.start(ctx, opts); err != nil {
		// Stop undoes whatever part of the startup succeeded.
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, opts Options) error {
	var err error
	if s.frontendPort, err = pickPort(opts.FrontendPort, opts.FallBackToFreePort); err != nil {
		return fmt.Errorf("frontend port: %w", err)
	}
	if opts.UIPort != NoUI {
		if s.uiPort, err = pickPort(opts.UIPort, opts.FallBackToFreePort); err != nil {
			return fmt.Errorf("ui port: %w", err)
		}
	}
	started := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startTimeout)
		defer cancel()
	}
	srv, err := newTemporalServer(s.dbPath, s.frontendPort, opts, s.serverLevel)
	if err != nil {
		return err
	}
	// A failed Start has already rolled itself back; Stop must not see it.
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start temporal: %w", err)
	}
	s.temporal = srv
	if err := s.awaitFrontend(ctx, opts.SearchAttributes); err != nil {
		return err
	}
	if s.uiPort != NoUI {
		if s.ui, err = startUI(ctx, s.uiPort, s.FrontendAddress(), s.namespace); err != nil {
			return err
		}
	}
	s.log.Debug("temporal dev server started", "frontend", s.FrontendAddress(), "ui", s.UIURL(),
		"db", s.dbPath, "elapsed", time.Since(started))
	return nil
}

// FrontendAddress is the host:port Temporal clients dial.
func (s *Server) FrontendAddress() string {
	return net.JoinHostPort(host, strconv.Itoa(s.frontendPort))
}

// Namespace is the namespace registered at start.
func (s *Server) Namespace() string { return s.namespace }

// DatabasePath is the SQLite file holding the server's state.
func (s *Server) DatabasePath() string { return s.dbPath }

// UIURL is the Web UI's base URL, or "" when the UI is disabled.
func (s *Server) UIURL() string {
	if s.uiPort == NoUI {
		return ""
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(s.uiPort))
}

// WorkflowURL is the Web UI page of a workflow's latest run, or "" when the
// UI is disabled.
func (s *Server) WorkflowURL(namespace, workflowID string) string {
	base := s.UIURL()
	if base == "" {
		return ""
	}
	return base + "/namespaces/" + url.PathEscape(namespace) + "/workflows/" + url.PathEscape(workflowID)
}

// Stop shuts down the UI, then the Temporal services, then releases the data
// dir. Workers and clients of this server should be stopped first. Stop is
// safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.serverLevel.Set(stoppingLevel)
		if s.ui != nil {
			s.ui.Stop()
		}
		var errs []error
		if s.temporal != nil {
			if err := s.temporal.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("stop temporal: %w", err))
			}
		}
		if err := s.lock.Close(); err != nil {
			errs = append(errs, fmt.Errorf("release data dir: %w", err))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

func resolveOptions(opts Options) (Options, error) {
	if opts.DataDir == "" {
		// The data dir is the configuration's to resolve (internal/config).
		return opts, errors.New("no data dir")
	}
	if opts.FrontendPort < 0 || opts.FrontendPort > 65535 {
		return opts, fmt.Errorf("frontend port %d out of range", opts.FrontendPort)
	}
	if opts.UIPort < NoUI || opts.UIPort > 65535 {
		return opts, fmt.Errorf("ui port %d out of range", opts.UIPort)
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return opts, nil
}
