// Package egress is the proxy dependency installs reach the network
// through: HTTP CONNECT tunnels and plain-HTTP proxy requests, both held
// to one host allow-list, with deny rules over it. The proxy resolves
// each name itself, once, refuses addresses of the worker's own host and
// networks (loopback, private, link-local, metadata, ...) unless the
// host:port is a named registry, and dials the address it checked, so a
// name that changes its answer cannot slip past. Every connection is
// logged and kept in the record of the task whose token it carried.
package egress

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"time"
)

// Resolver looks up a name's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects to an address the proxy checked; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Config is the proxy's rules and limits.
type Config struct {
	// Allow are the rules every grant gets (ParseRule); a grant adds its
	// own. Deny rules (ParseDenyRule) win over any allow rule.
	Allow []string
	Deny  []string
	// Registries are host:port (or URLs) the proxy reaches even at a
	// loopback, private or link-local address: a private registry, or
	// one a test serves. They are allowed without an allow rule. Metadata
	// endpoints stay refused.
	Registries []string

	Resolver Resolver // nil: net.DefaultResolver
	Dialer   Dialer   // nil: a net.Dialer

	// ConnectTimeout bounds a name's lookup and the dial; IdleTimeout
	// closes a connection on which nothing moved for that long.
	ConnectTimeout time.Duration // 0: 10s
	IdleTimeout    time.Duration // 0: 2m
	// MaxConnsPerTask bounds a task's connections open at once.
	MaxConnsPerTask int // 0: 32
	// MaxHeaderBytes bounds a request's and a response's headers.
	MaxHeaderBytes int // 0: 32 KiB

	Logger *slog.Logger // nil: slog.Default()
}

func (c Config) withDefaults() Config {
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Dialer == nil {
		c.Dialer = &net.Dialer{}
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.MaxConnsPerTask <= 0 {
		c.MaxConnsPerTask = 32
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 32 << 10
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Proxy is the egress proxy. One proxy serves any number of tasks, each
// through its own Grant.
type Proxy struct {
	cfg        Config
	allow      []rule
	deny       []rule
	registries map[string]bool // normalized host:port
	srv        *http.Server
	forwarder  *httputil.ReverseProxy

	mu       sync.Mutex
	grants   map[string]*Grant // by token
	tunnels  map[net.Conn]bool // hijacked connections, closed by Close; nil once closed
	handlers sync.WaitGroup    // requests being served, waited for by Close
}

// New checks the rules and builds a proxy; Serve starts it.
func New(cfg Config) (*Proxy, error) {
	cfg = cfg.withDefaults()
	p := &Proxy{cfg: cfg, registries: map[string]bool{}, grants: map[string]*Grant{}, tunnels: map[net.Conn]bool{}}
	for _, s := range cfg.Allow {
		r, err := parseRule(s, false)
		if err != nil {
			return nil, fmt.Errorf("egress allow rule: %w", err)
		}
		p.allow = append(p.allow, r)
	}
	for _, s := range cfg.Deny {
		r, err := parseRule(s, true)
		if err != nil {
			return nil, fmt.Errorf("egress deny rule: %w", err)
		}
		p.deny = append(p.deny, r)
	}
	for _, s := range cfg.Registries {
		a, err := parseRegistry(s)
		if err != nil {
			return nil, fmt.Errorf("egress registry: %w", err)
		}
		p.registries[a] = true
	}
	p.forwarder = &httputil.ReverseProxy{
		Rewrite: rewrite,
		Transport: &http.Transport{
			Proxy:                  nil, // never the worker's own proxy settings
			DialContext:            p.dialChecked,
			DisableKeepAlives:      true, // one request, one checked connection
			DisableCompression:     true,
			MaxResponseHeaderBytes: int64(cfg.MaxHeaderBytes),
			ResponseHeaderTimeout:  cfg.IdleTimeout,
		},
		ErrorHandler: forwardFailed,
		ErrorLog:     slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: cfg.ConnectTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return p, nil
}

// Serve accepts connections on l until Close; it may be called for
// several listeners (one per network the sandboxes reach it from).
func (p *Proxy) Serve(l net.Listener) error {
	if err := p.srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("egress proxy: %w", err)
	}
	return nil
}

// Close stops the listeners, ends every connection and returns once
// each request being served has been recorded.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.mu.Lock()
	for c := range p.tunnels {
		c.Close()
	}
	p.tunnels = nil
	p.mu.Unlock()
	p.handlers.Wait()
	return err
}

// serving counts a request in for Close to wait on; false once the
// proxy is closed.
func (p *Proxy) serving() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tunnels == nil {
		return false
	}
	p.handlers.Add(1)
	return true
}

// ServeHTTP handles one proxy request: authenticates it, checks its
// target, and tunnels (CONNECT) or forwards (plain HTTP) it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.serving() {
		http.Error(w, "autocoder egress proxy: closing", http.StatusServiceUnavailable)
		return
	}
	defer p.handlers.Done()
	rec := Record{Method: r.Method, Start: time.Now()}
	g := p.authenticate(r)
	if g == nil {
		w.Header().Set("Proxy-Authenticate", `Basic realm="autocoder egress"`)
		p.refuse(w, nil, &rec, http.StatusProxyAuthRequired, "no valid proxy credentials (user: the task id, password: its token)")
		return
	}
	rec.TaskID = g.TaskID
	t, err := parseTarget(r.Method, r.RequestURI)
	if err != nil {
		p.refuse(w, g, &rec, http.StatusBadRequest, err.Error())
		return
	}
	rec.Host, rec.Port = t.host, t.port
	if !g.acquire(p.cfg.MaxConnsPerTask) {
		p.refuse(w, g, &rec, http.StatusTooManyRequests, fmt.Sprintf("the task has %d connections open, the most it may", p.cfg.MaxConnsPerTask))
		return
	}
	defer g.release()
	addrs, status, reason := p.check(r.Context(), g, t)
	rec.Resolved = addrs
	if reason != "" {
		if status == http.StatusBadGateway {
			rec.Verdict = Failed
		}
		p.refuse(w, g, &rec, status, reason)
		return
	}
	if r.Method == http.MethodConnect {
		p.tunnel(w, r, t, addrs, &rec)
	} else {
		p.forward(w, r, t, addrs, &rec)
	}
	p.finish(g, &rec)
}

// authenticate finds the grant whose task id and token the request's
// Proxy-Authorization carries.
func (p *Proxy) authenticate(r *http.Request) *Grant {
	creds := r.Header.Get("Proxy-Authorization")
	if creds == "" {
		return nil
	}
	user, token, ok := (&http.Request{Header: http.Header{"Authorization": {creds}}}).BasicAuth()
	if !ok {
		return nil
	}
	p.mu.Lock()
	g := p.grants[token]
	p.mu.Unlock()
	if g == nil || subtle.ConstantTimeCompare([]byte(user), []byte(g.TaskID)) != 1 {
		return nil
	}
	return g
}

// check applies the rules to a target and resolves it; it returns the
// addresses to dial, or the status and reason it is refused with (and
// the addresses, when one of them is why).
func (p *Proxy) check(ctx context.Context, g *Grant, t target) ([]netip.Addr, int, string) {
	for _, r := range p.deny {
		if r.denies(t) {
			return nil, http.StatusForbidden, fmt.Sprintf("%s is denied by the rule %q", t.authority(), r.text)
		}
	}
	registry := p.registries[t.authority()]
	if !registry && !anyAllows(g.allow, t) && !anyAllows(p.allow, t) {
		return nil, http.StatusForbidden, fmt.Sprintf("%s is not on the allow-list", t.authority())
	}
	addrs := []netip.Addr{t.ip}
	if !t.ip.IsValid() {
		ctx, cancel := context.WithTimeout(ctx, p.cfg.ConnectTimeout)
		defer cancel()
		found, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", t.host)
		if err != nil || len(found) == 0 {
			return nil, http.StatusBadGateway, fmt.Sprintf("%s does not resolve: %v", t.host, err)
		}
		addrs = found
	}
	for i, ip := range addrs {
		ip = ip.WithZone("").Unmap()
		addrs[i] = ip
		for _, r := range p.deny {
			if r.deniesAddr(ip, t.port) {
				return addrs, http.StatusForbidden, fmt.Sprintf("%s, denied by the rule %q", at(t, ip), r.text)
			}
		}
		what, metadata := classify(ip)
		switch {
		case metadata:
			return addrs, http.StatusForbidden, fmt.Sprintf("%s, a %s address, which is never reachable", at(t, ip), what)
		case what != "" && !registry:
			return addrs, http.StatusForbidden, fmt.Sprintf("%s, a %s address; a registry there must be named as one (%s)", at(t, ip), what, t.authority())
		}
	}
	return addrs, 0, ""
}

// at says where a target is: its address, or its name and the address
// it resolved to.
func at(t target, ip netip.Addr) string {
	if t.ip.IsValid() {
		return ip.String() + " is"
	}
	return t.host + " is at " + ip.String()
}

func anyAllows(rules []rule, t target) bool {
	for _, r := range rules {
		if r.allows(t) {
			return true
		}
	}
	return false
}

// dial connects to the first of the checked addresses that answers.
func (p *Proxy) dial(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ConnectTimeout)
	defer cancel()
	var errs []error
	for _, ip := range addrs {
		c, err := p.cfg.Dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("connect: %w", errors.Join(errs...))
}

// tunnel answers a CONNECT: it dials the checked address, then copies
// both ways until both ends close or nothing moves for the idle timeout.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, t target, addrs []netip.Addr, rec *Record) {
	upstream, err := p.dial(r.Context(), addrs, t.port)
	if err != nil {
		rec.Verdict, rec.Reason = Failed, err.Error()
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	rec.Addr = upstream.RemoteAddr().String()
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		rec.Verdict, rec.Reason = Failed, "hijack: "+err.Error()
		return
	}
	if !p.track(client, upstream) {
		rec.Verdict, rec.Reason = Failed, "the proxy is closing"
		return
	}
	defer p.untrack(client, upstream)
	rec.Verdict = Allowed
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		rec.Reason = "write: " + err.Error()
		return
	}
	// What the client sent after the CONNECT is in brw's buffer.
	rec.Up, rec.Down, rec.Reason = pipe(client, brw.Reader, upstream, p.cfg.IdleTimeout)
}

// track registers a tunnel's connections for Close; false when the proxy
// is closed already (and the connections are closed).
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tunnels == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.tunnels[c] = true
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.tunnels, c) // a no-op once Close has run
	}
}

// refuse answers a request the proxy will not carry, and records it.
func (p *Proxy) refuse(w http.ResponseWriter, g *Grant, rec *Record, status int, reason string) {
	if rec.Verdict == "" {
		rec.Verdict = Denied
	}
	rec.Reason = reason
	http.Error(w, "autocoder egress proxy: "+reason, status)
	p.finish(g, rec)
}

// finish logs a connection and adds it to its grant's record.
func (p *Proxy) finish(g *Grant, rec *Record) {
	rec.Duration = time.Since(rec.Start)
	level := slog.LevelInfo
	if rec.Verdict != Allowed {
		level = slog.LevelWarn
	}
	p.cfg.Logger.Log(context.Background(), level, "egress connection",
		"taskID", rec.TaskID, "method", rec.Method, "host", rec.Host, "port", rec.Port, "resolved", rec.Resolved, "addr", rec.Addr,
		"up", rec.Up, "down", rec.Down, "duration", rec.Duration, "verdict", string(rec.Verdict), "reason", rec.Reason)
	if g != nil {
		g.record(*rec)
	}
}

// forwarded is what the forwarder's rewrite and dial need of a plain-HTTP
// request: its checked target, and the record that counts its bytes.
type forwarded struct {
	t     target
	addrs []netip.Addr
	rec   *Record
	conn  *meteredConn // set by the dial
	idle  time.Duration
}

type forwardedKey struct{}

// forward carries one plain-HTTP request to the checked address.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, t target, addrs []netip.Addr, rec *Record) {
	f := &forwarded{t: t, addrs: addrs, rec: rec, idle: p.cfg.IdleTimeout}
	rec.Verdict = Allowed
	ctx := context.WithValue(r.Context(), forwardedKey{}, f)
	rc := http.NewResponseController(w)
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = idleBody{r.Body, rc, p.cfg.IdleTimeout}
	}
	p.forwarder.ServeHTTP(idleWriter{w, rc, p.cfg.IdleTimeout}, r.WithContext(ctx))
	if f.conn != nil {
		rec.Up, rec.Down = f.conn.up.Load(), f.conn.down.Load()
	}
}

// rewrite sends the request, in origin form, to the host it was checked
// for. The hop-by-hop headers, Proxy-Authorization among them, are
// dropped by the forwarder; no X-Forwarded header tells the sandbox's
// address.
func rewrite(pr *httputil.ProxyRequest) {
	f := pr.In.Context().Value(forwardedKey{}).(*forwarded)
	in := pr.In.URL
	pr.Out.URL = &url.URL{Scheme: "http", Host: f.t.authority(), Path: in.Path, RawPath: in.RawPath, RawQuery: in.RawQuery}
	pr.Out.Host = hostHeader(f.t)
	// No protocol upgrade: a switched connection would leave the
	// proxy's accounting, and Close could not end it. Registries need
	// none; a 101 answer is refused as not asked for.
	pr.Out.Header.Del("Upgrade")
	pr.Out.Header.Del("Connection")
}

// hostHeader is the Host a request for t carries: the port only when it
// is not HTTP's.
func hostHeader(t target) string {
	if t.port == 80 {
		if t.ip.Is6() {
			return "[" + t.host + "]"
		}
		return t.host
	}
	return t.authority()
}

// dialChecked is the forwarder's dial: it connects to the addresses the
// request was checked for, whatever the URL says.
func (p *Proxy) dialChecked(ctx context.Context, _, _ string) (net.Conn, error) {
	f, ok := ctx.Value(forwardedKey{}).(*forwarded)
	if !ok {
		return nil, errors.New("egress: a dial without a checked target")
	}
	c, err := p.dial(ctx, f.addrs, f.t.port)
	if err != nil {
		return nil, err
	}
	f.rec.Addr = c.RemoteAddr().String()
	f.conn = &meteredConn{Conn: c, idle: f.idle}
	return f.conn, nil
}

// forwardFailed answers a plain-HTTP request the forwarder could not
// carry through.
func forwardFailed(w http.ResponseWriter, r *http.Request, err error) {
	f := r.Context().Value(forwardedKey{}).(*forwarded)
	f.rec.Verdict, f.rec.Reason = Failed, err.Error()
	http.Error(w, "autocoder egress proxy: "+err.Error(), http.StatusBadGateway)
}

// idleWriter gives each write to a plain-HTTP client the idle timeout,
// so a client that stops reading does not hold the proxy.
type idleWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (w idleWriter) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	return w.ResponseWriter.Write(b)
}

func (w idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// idleBody gives each read of a plain-HTTP request's body the idle
// timeout, so a client that stops sending does not hold the proxy.
type idleBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (b idleBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.idle))
	return b.ReadCloser.Read(p)
}
