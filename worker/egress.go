package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/egress"
	"github.com/autocoder/autocoder/sandbox"
)

// Egress is the worker's egress proxy: one for every task the worker
// runs, each install run let through by a route of its own (Route, then
// Route.Sandbox() as the run's sandbox.Spec Egress, and Route.Close for
// its connections' record once the run has ended). A process outside a
// sandbox reaches it at Addr with a grant's Env.
type Egress struct {
	Proxy *egress.Proxy
	// Addr is host:port where the proxy listens.
	Addr string
	// CABundle, when set, is the PEM bundle routed runs trust
	// (sandbox.Egress.CABundle); StartEgress sets the host's own, so that
	// an install trusts what the worker trusts whatever its image holds
	// (an offline image's Debian minbase holds no CA at all).
	CABundle string
	// Dir is where the routes' sockets are made ("": the temporary
	// directory); a SharedDir when the docker daemon mounts them.
	Dir  string
	done chan error
}

// StartEgress starts the egress proxy on listen (host:port; port 0 picks
// a free one).
func StartEgress(cfg egress.Config, listen string) (*Egress, error) {
	p, err := egress.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: listen: %w", err)
	}
	e := &Egress{Proxy: p, Addr: l.Addr().String(), CABundle: systemCABundle(), done: make(chan error, 1)}
	go func() { e.done <- p.Serve(l) }()
	slog.Info("egress proxy started", "addr", e.Addr, "allow", cfg.Allow, "deny", cfg.Deny, "registries", cfg.Registries)
	return e, nil
}

// caBundles are where Linux distributions keep the system's CA bundle,
// as Go's crypto/x509 looks for it.
var caBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine
}

// systemCABundle is the host's CA bundle, "" when none is found (routed
// runs then trust their image's).
func systemCABundle() string {
	for _, f := range caBundles {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			return f
		}
	}
	return ""
}

// Close stops the proxy and ends the connections it carries.
func (e *Egress) Close() error {
	err := e.Proxy.Close()
	if serveErr := <-e.done; serveErr != nil && err == nil {
		err = serveErr
	}
	return err
}

// Route is the proxy opened to one sandbox run of a task: a grant with
// the task's own allow rules, served on a unix socket of the run's own,
// which the sandbox mounts (sandbox.NetworkEgress).
type Route struct {
	Grant    *egress.Grant
	Socket   string
	CABundle string
	dir      string
	l        net.Listener
	done     chan error
}

// Route opens the proxy to one run of taskID, with allow rules on top of
// the proxy's (its language's registries). The run uses Sandbox(); Close
// ends the route once the run has ended.
func (e *Egress) Route(taskID string, allow []string) (_ *Route, err error) {
	g, err := e.Proxy.Grant(taskID, allow)
	if err != nil {
		return nil, fmt.Errorf("egress route: %w", err)
	}
	defer func() {
		if err != nil {
			g.Revoke()
		}
	}()
	dir, err := os.MkdirTemp(e.Dir, routePrefix)
	if err != nil {
		return nil, fmt.Errorf("egress route: %w", err)
	}
	r := &Route{Grant: g, Socket: filepath.Join(dir, "proxy.sock"), CABundle: e.CABundle, dir: dir, done: make(chan error, 1)}
	if r.l, err = net.Listen("unix", r.Socket); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("egress route: listen: %w", err)
	}
	// The sandbox's user is not this process's: it needs to reach the
	// socket, and the token keeps every other user out.
	for path, mode := range map[string]os.FileMode{dir: 0o755, r.Socket: 0o666} {
		if err = os.Chmod(path, mode); err != nil {
			r.l.Close()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("egress route: %w", err)
		}
	}
	go func() { r.done <- e.Proxy.Serve(r.l) }()
	return r, nil
}

// routePrefix begins the name of each route's directory.
const routePrefix = "autocoder-egress-"

// staleRouteAge is how old a route's directory must be before it can be
// taken for a dead worker's: a live route's socket listens within
// moments of the directory's making.
const staleRouteAge = time.Minute

// RemoveStaleRoutes removes from dir the route directories of workers
// that died (killed, or their container stopped) without closing them:
// older than staleRouteAge, with a socket nobody listens on. Workers that
// share dir (sandbox.shared_dir) keep their live routes: a connection to
// each is tried, not assumed. It returns how many went.
func RemoveStaleRoutes(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		slog.Warn("list egress routes", "dir", dir, "error", err)
		return 0
	}
	removed := 0
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if !e.IsDir() || !strings.HasPrefix(e.Name(), routePrefix) || err != nil || time.Since(fi.ModTime()) < staleRouteAge {
			continue
		}
		if c, err := net.DialTimeout("unix", filepath.Join(path, "proxy.sock"), time.Second); err == nil {
			c.Close()
			continue
		} else if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(path); err != nil {
			slog.Warn("remove a dead worker's egress route", "dir", path, "error", err)
			continue
		}
		removed++
	}
	return removed
}

// Sandbox is what a sandbox.Spec with Network sandbox.NetworkEgress
// takes as its Egress.
func (r *Route) Sandbox() sandbox.Egress {
	return sandbox.Egress{Socket: r.Socket, Proxy: r.Grant, CABundle: r.CABundle}
}

// Close stops the route's socket, waits until its connections have ended
// (or ctx does), and returns the run's connection record (Grant.Close).
func (r *Route) Close(ctx context.Context) ([]egress.Record, int, error) {
	r.l.Close()
	<-r.done
	defer os.RemoveAll(r.dir)
	return r.Grant.Close(ctx)
}

// Routes is the proxy as the activities open it, a route per install run.
func (e *Egress) Routes() activities.EgressRoutes { return routes{e} }

type routes struct{ e *Egress }

func (r routes) Route(taskID string, allow []string) (activities.EgressRoute, error) {
	rt, err := r.e.Route(taskID, allow)
	if err != nil {
		return nil, err
	}
	return rt, nil
}
