package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/internal/store"
)

// Check is one thing a worker needs to take work; /readyz names those
// that fail.
type Check struct {
	Name string
	Run  func(context.Context) error
}

// CheckTimeout bounds each readiness check: a probe must answer quickly,
// and a dependency slower than this is as good as unreachable.
const CheckTimeout = 3 * time.Second

// Checker is what the readiness check asks of the sandbox.
type Checker interface {
	Check(ctx context.Context) error
}

// ReadinessChecks are a worker's checks: Temporal answers, the store
// answers, and, for a worker that has one, the sandbox can run.
func ReadinessChecks(c client.Client, st store.Store, sb Checker) []Check {
	checks := []Check{
		{Name: "temporal", Run: func(ctx context.Context) error {
			_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
			return err
		}},
		{Name: "store", Run: func(ctx context.Context) error {
			// A memo nobody writes: "not found" is an answer.
			if _, err := st.GetMemo(ctx, "readiness check"); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			return nil
		}},
	}
	if sb != nil {
		checks = append(checks, Check{Name: "sandbox", Run: sb.Check})
	}
	return checks
}

// Endpoints serve a worker's metrics and health over HTTP: /metrics,
// /healthz (the process is alive) and /readyz (every check passes).
type Endpoints struct {
	srv *http.Server
	ln  net.Listener
}

// Serve listens on addr at once, so that an address that cannot be bound
// is an error at start, and serves in the background until Close.
func Serve(addr string, metrics http.Handler, checks []Check) (*Endpoints, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/readyz", readiness(checks))
	e := &Endpoints{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics and health endpoints stopped", "address", addr, "error", err)
		}
	}()
	return e, nil
}

// Addr is the address the endpoints listen on (the port chosen for ":0").
func (e *Endpoints) Addr() string { return e.ln.Addr().String() }

// Close stops serving, letting scrapes in progress finish for a moment.
func (e *Endpoints) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.srv.Shutdown(ctx)
}

// readiness runs the checks at once, each within CheckTimeout, and
// answers 200 when all pass, else 503; the body has a line per check.
func readiness(checks []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		errs := make([]error, len(checks))
		var wg sync.WaitGroup
		for i, c := range checks {
			wg.Go(func() { errs[i] = runCheck(r.Context(), c) })
		}
		wg.Wait()
		var failed []string
		var body strings.Builder
		for i, c := range checks {
			if errs[i] != nil {
				failed = append(failed, c.Name)
				fmt.Fprintf(&body, "%s: failed: %v\n", c.Name, errs[i])
			} else {
				fmt.Fprintf(&body, "%s: ok\n", c.Name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n%s", strings.Join(failed, ", "), body.String())
			return
		}
		fmt.Fprintf(w, "ready\n%s", body.String())
	})
}

// runCheck runs c within CheckTimeout; a check that does not return in
// time fails then, even if it ignores its context.
func runCheck(ctx context.Context, c Check) error {
	ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within %s", CheckTimeout)
	}
}
