package worker

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/autocoder/autocoder/internal/egress"
)

// Egress is the worker's egress proxy: one for every task the worker
// runs, each install run let through by a grant of its own
// (Proxy.Grant, then Grant.Env(Addr) in the run's environment, and
// Grant.Close for its connections' record once the run has ended).
type Egress struct {
	Proxy *egress.Proxy
	// Addr is host:port where the proxy listens.
	Addr string
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
	e := &Egress{Proxy: p, Addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { e.done <- p.Serve(l) }()
	slog.Info("egress proxy started", "addr", e.Addr, "allow", cfg.Allow, "deny", cfg.Deny, "registries", cfg.Registries)
	return e, nil
}

// Close stops the proxy and ends the connections it carries.
func (e *Egress) Close() error {
	err := e.Proxy.Close()
	if serveErr := <-e.done; serveErr != nil && err == nil {
		err = serveErr
	}
	return err
}
