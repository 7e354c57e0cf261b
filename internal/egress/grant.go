package egress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Verdict is what the proxy did with a connection.
type Verdict string

const (
	// Allowed: the rules let it through and it was connected.
	Allowed Verdict = "allowed"
	// Denied: the rules, the addresses or a limit refused it.
	Denied Verdict = "denied"
	// Failed: allowed, but the name did not resolve or nothing answered.
	Failed Verdict = "failed"
)

// Record is one connection through the proxy (a CONNECT tunnel, or one
// plain-HTTP request) as the log and a grant's record keep it.
type Record struct {
	TaskID string
	Method string // CONNECT, or the plain-HTTP request's
	Host   string
	Port   int
	// Resolved are the host's addresses as the proxy found them (the
	// address itself for a literal one); none when it was refused first.
	Resolved []netip.Addr
	// Addr is the address dialed, "" when none was.
	Addr     string
	Up       int64 // bytes from the sandbox to the host
	Down     int64 // bytes from the host to the sandbox
	Start    time.Time
	Duration time.Duration
	Verdict  Verdict
	// Reason says why it was denied or failed, or what ended an allowed
	// connection early ("idle timeout").
	Reason string
}

// maxRecords bounds what a grant keeps; the log has every connection.
const maxRecords = 10000

// Grant lets one task's runs through the proxy: they authenticate with
// the task id as user name and the grant's token as password, and every
// connection is attributed to the task and kept in its record.
type Grant struct {
	TaskID string
	Token  string

	allow   []rule
	proxy   *Proxy
	active  atomic.Int32
	mu      sync.Mutex
	records []Record
	dropped int
}

// Grant opens the proxy to a task with allow rules of its own (its
// language's registries, say) on top of the proxy's. Revoke closes it.
func (p *Proxy) Grant(taskID string, allow []string) (*Grant, error) {
	if taskID == "" {
		return nil, fmt.Errorf("grant: a task id is needed")
	}
	g := &Grant{TaskID: taskID, Token: newToken(), proxy: p}
	for _, s := range allow {
		r, err := parseRule(s, false)
		if err != nil {
			return nil, fmt.Errorf("grant: allow rule: %w", err)
		}
		g.allow = append(g.allow, r)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.grants[g.Token] = g
	return g, nil
}

// Revoke refuses the grant's token from now on; connections already open
// go on until they end.
func (g *Grant) Revoke() {
	g.proxy.mu.Lock()
	defer g.proxy.mu.Unlock()
	delete(g.proxy.grants, g.Token)
}

// Close revokes the grant and waits until its connections have ended,
// or ctx does: a run that has ended leaves connections the proxy has yet
// to see close, and each is recorded when it does. It returns the
// grant's record, then complete unless the error says ctx ended first.
func (g *Grant) Close(ctx context.Context) ([]Record, int, error) {
	g.Revoke()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for g.active.Load() > 0 {
		select {
		case <-ctx.Done():
			recs, dropped := g.Records()
			return recs, dropped, fmt.Errorf("egress grant of %s: %d connections still open: %w", g.TaskID, g.active.Load(), ctx.Err())
		case <-tick.C:
		}
	}
	recs, dropped := g.Records()
	return recs, dropped, nil
}

// ProxyURL is the proxy's URL at addr (host:port) with the grant's
// credentials in it, as HTTP_PROXY takes it.
func (g *Grant) ProxyURL(addr string) string {
	return (&url.URL{Scheme: "http", User: url.UserPassword(g.TaskID, g.Token), Host: addr}).String()
}

// Env is the environment that sends a run's HTTP and HTTPS through the
// proxy at addr, in both the upper- and lower-case names clients read.
func (g *Grant) Env(addr string) map[string]string {
	u := g.ProxyURL(addr)
	return map[string]string{
		"HTTP_PROXY": u, "HTTPS_PROXY": u, "http_proxy": u, "https_proxy": u,
		"NO_PROXY": "", "no_proxy": "",
	}
}

// Records are the grant's connections so far, oldest first, and how many
// more there were past what a grant keeps.
func (g *Grant) Records() ([]Record, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Record(nil), g.records...), g.dropped
}

func (g *Grant) record(r Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.records) >= maxRecords {
		g.dropped++
		return
	}
	g.records = append(g.records, r)
}

// acquire takes one of the task's connection slots.
func (g *Grant) acquire(max int) bool {
	if g.active.Add(1) > int32(max) {
		g.active.Add(-1)
		return false
	}
	return true
}

func (g *Grant) release() { g.active.Add(-1) }

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
