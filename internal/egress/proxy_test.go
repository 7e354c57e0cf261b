package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A resolver whose answers a test sets: each lookup of a name takes the
// next answer, the last one again once they run out. It stands where DNS
// would, so that a test can make a name point at its own servers.
type testResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	calls   map[string]int
}

func newResolver(answers map[string][]string) *testResolver {
	return &testResolver{answers: answers, calls: map[string]int{}}
}

func (r *testResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.answers[host]
	if len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	a := seq[min(r.calls[host], len(seq)-1)]
	r.calls[host]++
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

func (r *testResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// A dialer that records the addresses the proxy asks for and, when
// redirect is set, connects there instead (a public address this machine
// cannot serve stands for a local server).
type recordingDialer struct {
	mu       sync.Mutex
	dialed   []string
	redirect string
}

func (d *recordingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	to := addr
	if d.redirect != "" {
		to = d.redirect
	}
	d.mu.Unlock()
	return (&net.Dialer{}).DialContext(ctx, network, to)
}

func (d *recordingDialer) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// startProxy serves a proxy on the loopback and returns it with its address.
func startProxy(t *testing.T, cfg Config) (*Proxy, string) {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(l) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return p, l.Addr().String()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

func grant(t *testing.T, p *Proxy, taskID string, allow ...string) *Grant {
	t.Helper()
	g, err := p.Grant(taskID, allow)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Revoke)
	return g
}

// registryServer is a TLS server on the loopback answering every request
// with "hello from PATH", and the port it listens on.
func registryServer(t *testing.T) (*httptest.Server, int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.URL.Path)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshakes the tests cut short
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return srv, port
}

// httpsThrough fetches url through the proxy as a package manager would,
// trusting srv's certificate (issued for example.com).
func httpsThrough(t *testing.T, proxyURL string, srv *httptest.Server, target string) (string, error) {
	t.Helper()
	pu, _ := url.Parse(proxyURL)
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(target)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// rawRequest sends one request line (with the grant's credentials, when
// given) to the proxy and returns the response's status and body.
func rawRequest(t *testing.T, proxyAddr string, g *Grant, method, target string, extra ...string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	host := target
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		host = u.Host
	} else if strings.HasPrefix(target, "/") {
		host = "proxy.example.test" // a request to the proxy as a server
	}
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, host)
	if g != nil {
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(g.TaskID+":"+g.Token)) + "\r\n"
	}
	for _, h := range extra {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && method == http.MethodConnect {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitRecords waits for a grant to have n records.
func waitRecords(t *testing.T, g *Grant, n int) []Record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs, _ := g.Records()
		if len(recs) >= n {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records after 10s, want %d: %+v", len(recs), n, recs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConnectToNamedRegistry: a registry the configuration names reaches
// its server on the loopback through a CONNECT tunnel; the connection is
// in the task's record with its address and bytes both ways.
func TestConnectToNamedRegistry(t *testing.T) {
	srv, port := registryServer(t)
	name := "pkgs.example.test"
	res := newResolver(map[string][]string{name: {"127.0.0.1"}})
	p, addr := startProxy(t, Config{Resolver: res, Registries: []string{name + ":" + strconv.Itoa(port)}})
	g := grant(t, p, "task-1")

	body, err := httpsThrough(t, g.ProxyURL(addr), srv, fmt.Sprintf("https://%s:%d/simple/", name, port))
	if err != nil || body != "hello from /simple/" {
		t.Fatalf("through the proxy: %q, %v", body, err)
	}
	rec := waitRecords(t, g, 1)[0]
	if rec.Verdict != Allowed || rec.TaskID != "task-1" || rec.Host != name || rec.Port != port ||
		rec.Addr != "127.0.0.1:"+strconv.Itoa(port) || rec.Method != "CONNECT" || len(rec.Resolved) != 1 {
		t.Errorf("record %+v", rec)
	}
	if rec.Up < 100 || rec.Down < 100+int64(len(body)) {
		t.Errorf("bytes up %d, down %d: a TLS handshake and a response are more", rec.Up, rec.Down)
	}
}

// TestPrivateAddressNeedsRegistry: a name on the allow-list that resolves
// to the loopback or a private network is refused unless its host:port is
// a named registry, and nothing is dialed.
func TestPrivateAddressNeedsRegistry(t *testing.T) {
	srv, port := registryServer(t)
	res := newResolver(map[string][]string{
		"pkgs.example.test": {"127.0.0.1"}, "lan.example.test": {"192.168.1.20"},
		"ula.example.test": {"fd12::1"}, "mapped.example.test": {"::ffff:10.1.2.3"},
		"cgnat.example.test": {"100.64.0.1"}, "nat64.example.test": {"64:ff9b::7f00:1"},
	})
	dialer := &recordingDialer{}
	// The registry named is another port: the exact host:port counts.
	p, addr := startProxy(t, Config{Resolver: res, Dialer: dialer, Allow: []string{"*.example.test:" + strconv.Itoa(port), "*.example.test"},
		Registries: []string{"pkgs.example.test:1"}})
	g := grant(t, p, "task-2")

	if _, err := httpsThrough(t, g.ProxyURL(addr), srv, fmt.Sprintf("https://pkgs.example.test:%d/", port)); err == nil {
		t.Error("an allowed name at 127.0.0.1, not a named registry, was reached")
	}
	for host, what := range map[string]string{
		"pkgs.example.test:" + strconv.Itoa(port): "loopback", "lan.example.test:443": "private",
		"ula.example.test:443": "private", "mapped.example.test:443": "private",
		"cgnat.example.test:443": "carrier-grade NAT", "nat64.example.test:443": "loopback",
		"127.0.0.1:" + strconv.Itoa(port): "not on the allow-list",
	} {
		status, body := rawRequest(t, addr, g, "CONNECT", host)
		if status != http.StatusForbidden || !strings.Contains(body, what) {
			t.Errorf("CONNECT %s: %d %q, want 403 naming %q", host, status, body, what)
		}
	}
	if d := dialer.addrs(); len(d) != 0 {
		t.Errorf("dialed %v for refused targets", d)
	}
	for _, rec := range waitRecords(t, g, 8) {
		if rec.Verdict != Denied || rec.Reason == "" || rec.Addr != "" {
			t.Errorf("record %+v, want denied with a reason and no address", rec)
		}
		if rec.Host == "lan.example.test" && (len(rec.Resolved) != 1 || rec.Resolved[0].String() != "192.168.1.20") {
			t.Errorf("record %+v, want the address it resolved to", rec)
		}
	}
}

// TestLiteralAddressAsRegistry: a literal loopback address is reached
// only when its exact address and port is a named registry.
func TestLiteralAddressAsRegistry(t *testing.T) {
	srv, port := registryServer(t)
	target := "127.0.0.1:" + strconv.Itoa(port)
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Allow: []string{"127.0.0.1:" + strconv.Itoa(port)}})
	g := grant(t, p, "task-3")
	if status, body := rawRequest(t, addr, g, "CONNECT", target); status != http.StatusForbidden || !strings.Contains(body, "loopback") {
		t.Errorf("allowed but not named: %d %q", status, body)
	}
	p2, addr2 := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{"https://" + target + "/index"}})
	g2 := grant(t, p2, "task-3")
	if body, err := httpsThrough(t, g2.ProxyURL(addr2), srv, "https://"+target+"/x"); err != nil || body != "hello from /x" {
		t.Errorf("named registry by literal address: %q, %v", body, err)
	}
}

// TestRebinding: the proxy resolves a name once per connection and dials
// the address it checked, even when the name then points elsewhere.
func TestRebinding(t *testing.T) {
	srv, port := registryServer(t)
	name := "rebind.example.test"
	res := newResolver(map[string][]string{name: {"93.184.215.14", "127.0.0.1"}})
	u, _ := url.Parse(srv.URL)
	dialer := &recordingDialer{redirect: u.Host}
	p, addr := startProxy(t, Config{Resolver: res, Dialer: dialer, Allow: []string{name}})
	g := grant(t, p, "task-4")

	body, err := httpsThrough(t, g.ProxyURL(addr), srv, "https://"+name+"/pkg")
	if err != nil || body != "hello from /pkg" {
		t.Fatalf("through the proxy: %q, %v", body, err)
	}
	if d := dialer.addrs(); len(d) != 1 || d[0] != "93.184.215.14:443" {
		t.Errorf("dialed %v, want only the address checked, 93.184.215.14:443", d)
	}
	if n := res.lookups(name); n != 1 {
		t.Errorf("%d lookups for one connection, want 1", n)
	}
	// The next connection resolves anew, gets the loopback, and is refused.
	if status, body := rawRequest(t, addr, g, "CONNECT", name+":443"); status != http.StatusForbidden || !strings.Contains(body, "loopback") {
		t.Errorf("rebound name: %d %q", status, body)
	}
	_ = port
}

// TestGrantAllowIsPerTask: a grant's own allow rules (its language's
// registries) open hosts to its task alone.
func TestGrantAllowIsPerTask(t *testing.T) {
	srv, _ := registryServer(t)
	u, _ := url.Parse(srv.URL)
	res := newResolver(map[string][]string{"pkgs.example.test": {"93.184.215.14"}})
	p, addr := startProxy(t, Config{Resolver: res, Dialer: &recordingDialer{redirect: u.Host}})
	with := grant(t, p, "task-16", "pkgs.example.test")
	without := grant(t, p, "task-17")
	if status, body := rawRequest(t, addr, with, "CONNECT", "pkgs.example.test:443"); status != http.StatusOK {
		t.Errorf("the grant that allows it: %d %q", status, body)
	}
	if status, body := rawRequest(t, addr, without, "CONNECT", "pkgs.example.test:443"); status != http.StatusForbidden || !strings.Contains(body, "not on the allow-list") {
		t.Errorf("another task's grant: %d %q", status, body)
	}
}

// TestPlainHTTPUpload: a request body goes through to the registry and
// counts as bytes up.
func TestPlainHTTPUpload(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d", n)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{u.Host}})
	g := grant(t, p, "task-18")
	pu, _ := url.Parse(g.ProxyURL(addr))
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: 10 * time.Second}
	resp, err := client.Post(srv.URL+"/upload", "application/octet-stream", strings.NewReader(strings.Repeat("x", 100000)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "100000" {
		t.Errorf("the registry got %s bytes, want 100000", b)
	}
	if rec := waitRecords(t, g, 1)[0]; rec.Up < 100000 || rec.Verdict != Allowed {
		t.Errorf("record %+v", rec)
	}
}

// TestDenyBeatsAllow: a deny rule refuses what an allow rule, even the
// task's own, lets through; a range denies the addresses in it.
func TestDenyBeatsAllow(t *testing.T) {
	res := newResolver(map[string][]string{"ok.example.test": {"93.184.215.14"}, "cdn.example.test": {"203.0.113.9"}})
	dialer := &recordingDialer{}
	p, addr := startProxy(t, Config{Resolver: res, Dialer: dialer, Allow: []string{"*.example.test"},
		Deny: []string{"bad.example.test", "203.0.113.0/24", "*.example.test:8443"}})
	g := grant(t, p, "task-5", "bad.example.test")
	for target, rule := range map[string]string{
		"bad.example.test:443":  `"bad.example.test"`,
		"cdn.example.test:443":  `"203.0.113.0/24"`,
		"203.0.113.7:443":       `"203.0.113.0/24"`,
		"ok.example.test:8443":  `"*.example.test:8443"`,
		"BAD.Example.TEST.:443": `"bad.example.test"`,
	} {
		if status, body := rawRequest(t, addr, g, "CONNECT", target); status != http.StatusForbidden || !strings.Contains(body, "denied by the rule "+rule) {
			t.Errorf("CONNECT %s: %d %q, want 403 naming the rule %s", target, status, body, rule)
		}
	}
	if d := dialer.addrs(); len(d) != 0 {
		t.Errorf("dialed %v", d)
	}
}

// TestPlainHTTP: a plain-HTTP proxy request obeys the same rules as a
// CONNECT; an allowed one reaches the checked address, without the
// proxy's credentials.
func TestPlainHTTP(t *testing.T) {
	var seen http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		fmt.Fprintf(w, "index of %s at %s", r.URL.Path, r.Host)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	res := newResolver(map[string][]string{"pypi.example.test": {"127.0.0.1"}, "evil.example.test": {"93.184.215.14"},
		"other.example.test": {"93.184.215.14"}})
	dialer := &recordingDialer{}
	p, addr := startProxy(t, Config{Resolver: res, Dialer: dialer, Allow: []string{"*.example.test"}, Deny: []string{"evil.example.test"},
		Registries: []string{"http://pypi.example.test:" + u.Port()}})
	g := grant(t, p, "task-6")

	pu, _ := url.Parse(g.ProxyURL(addr))
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: 10 * time.Second}
	resp, err := client.Get("http://pypi.example.test:" + u.Port() + "/simple/?q=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "index of /simple/ at pypi.example.test:" + u.Port(); string(b) != want {
		t.Errorf("body %q, want %q", b, want)
	}
	if seen.Get("Proxy-Authorization") != "" || seen.Get("X-Forwarded-For") != "" {
		t.Errorf("the registry saw the proxy's credentials or the client's address: %v", seen)
	}
	for target, want := range map[string]string{
		"http://evil.example.test/x":  "denied by the rule",
		"http://elsewhere.test/x":     "not on the allow-list",
		"http://127.0.0.1:1/x":        "not on the allow-list",
		"http://169.254.169.254/x":    "not on the allow-list",
		"https://other.example.test/": "absolute http:// URL",
		"/x":                          "absolute http:// URL",
	} {
		if status, body := rawRequest(t, addr, g, "GET", target); status/100 != 4 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %q, want a refusal naming %q", target, status, body, want)
		}
	}
	if d := dialer.addrs(); len(d) != 1 || d[0] != "127.0.0.1:"+u.Port() {
		t.Errorf("dialed %v, want the registry only", d)
	}
	recs := waitRecords(t, g, 7)
	if r := recs[0]; r.Verdict != Allowed || r.Method != "GET" || r.Up == 0 || r.Down == 0 || r.Addr != "127.0.0.1:"+u.Port() {
		t.Errorf("record %+v", r)
	}
}

// TestMetadataRefused: metadata endpoints are refused by address, by a
// name that resolves to one, and even when named as a registry.
func TestMetadataRefused(t *testing.T) {
	res := newResolver(map[string][]string{"meta.example.test": {"169.254.169.254"}, "meta6.example.test": {"fd00:ec2::254"}})
	dialer := &recordingDialer{}
	p, addr := startProxy(t, Config{Resolver: res, Dialer: dialer,
		Allow:      []string{"*.example.test", "169.254.169.254", "[fd00:ec2::254]", "168.63.129.16"},
		Registries: []string{"169.254.169.254:80", "[fd00:ec2::254]:80", "meta.example.test:80", "168.63.129.16:80"}})
	g := grant(t, p, "task-7")
	for _, target := range []string{"169.254.169.254:80", "[fd00:ec2::254]:80", "meta.example.test:80", "meta6.example.test:443",
		"[::ffff:169.254.169.254]:80", "168.63.129.16:80"} {
		if status, body := rawRequest(t, addr, g, "CONNECT", target); status != http.StatusForbidden || !strings.Contains(body, "cloud metadata") {
			t.Errorf("CONNECT %s: %d %q", target, status, body)
		}
	}
	if status, body := rawRequest(t, addr, g, "GET", "http://169.254.169.254/latest/meta-data/"); status != http.StatusForbidden || !strings.Contains(body, "cloud metadata") {
		t.Errorf("GET metadata: %d %q", status, body)
	}
	if d := dialer.addrs(); len(d) != 0 {
		t.Errorf("dialed %v", d)
	}
}

// TestProxyAuthentication: a request without the credentials of a live
// grant is refused with 407 and a challenge.
func TestProxyAuthentication(t *testing.T) {
	res := newResolver(map[string][]string{"ok.example.test": {"93.184.215.14"}})
	p, addr := startProxy(t, Config{Resolver: res, Dialer: &recordingDialer{}, Allow: []string{"ok.example.test"}})
	g := grant(t, p, "task-8")
	other := grant(t, p, "task-9")
	revoked := grant(t, p, "task-10")
	revoked.Revoke()
	basic := func(user, pass string) string {
		return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	for name, header := range map[string]string{
		"none":           "",
		"wrong token":    basic(g.TaskID, "0123456789abcdef0123456789abcdef"),
		"another's user": basic(other.TaskID, g.Token),
		"revoked":        basic(revoked.TaskID, revoked.Token),
		"not basic":      "Proxy-Authorization: Bearer " + g.Token,
		"garbage":        "Proxy-Authorization: Basic !!!",
	} {
		var extra []string
		if header != "" {
			extra = append(extra, header)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT ok.example.test:443 HTTP/1.1\r\nHost: ok.example.test:443\r\n%s\r\n", strings.Join(append(extra, ""), "\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		c.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if resp.StatusCode != http.StatusProxyAuthRequired || !strings.HasPrefix(resp.Header.Get("Proxy-Authenticate"), "Basic ") {
			t.Errorf("%s: %d %v, want 407 with a Basic challenge", name, resp.StatusCode, resp.Header)
		}
	}
	for _, gr := range []*Grant{g, other, revoked} {
		if recs, _ := gr.Records(); len(recs) != 0 {
			t.Errorf("grant %s has records of refused requests: %+v", gr.TaskID, recs)
		}
	}
}

// TestConcurrentCap: a task has at most MaxConnsPerTask connections open;
// another task is not held back by it, and a closed one frees a slot.
func TestConcurrentCap(t *testing.T) {
	_, port := registryServer(t)
	target := "127.0.0.1:" + strconv.Itoa(port)
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{target}, MaxConnsPerTask: 2})
	g := grant(t, p, "task-11")
	open := func(g *Grant) (net.Conn, int) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\n\r\n", target, target,
			base64.StdEncoding.EncodeToString([]byte(g.TaskID+":"+g.Token)))
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"})
		if err != nil {
			t.Fatal(err)
		}
		return c, resp.StatusCode
	}
	a, s1 := open(g)
	b, s2 := open(g)
	c, s3 := open(g)
	defer b.Close()
	c.Close()
	if s1 != 200 || s2 != 200 || s3 != http.StatusTooManyRequests {
		t.Fatalf("statuses %d %d %d, want 200 200 429", s1, s2, s3)
	}
	d, s4 := open(grant(t, p, "task-12"))
	d.Close()
	if s4 != 200 {
		t.Errorf("another task: %d", s4)
	}
	a.Close()
	waitRecords(t, g, 2) // the refusal and the closed tunnel
	e, s5 := open(g)
	e.Close()
	if s5 != 200 {
		t.Errorf("after a tunnel closed: %d", s5)
	}
}

// TestIdleTimeout: a tunnel on which nothing moves is closed.
func TestIdleTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // a server that accepts and never answers
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	target := l.Addr().String()
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{target}, IdleTimeout: 300 * time.Millisecond})
	g := grant(t, p, "task-13")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n", target, base64.StdEncoding.EncodeToString([]byte(g.TaskID+":"+g.Token)))
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("read %v, want the proxy to close the idle tunnel", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 3*time.Second {
		t.Errorf("closed after %v, want about 300ms", d)
	}
	if rec := waitRecords(t, g, 1)[0]; rec.Reason != "idle timeout" {
		t.Errorf("record %+v", rec)
	}
}

// TestStalledUploadTimesOut: a plain-HTTP request whose body stops
// coming is ended after the idle timeout.
func TestStalledUploadTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{u.Host}, IdleTimeout: 300 * time.Millisecond})
	g := grant(t, p, "task-19")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s/up HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic %s\r\nContent-Length: 1000\r\n\r\nabc",
		srv.URL, u.Host, base64.StdEncoding.EncodeToString([]byte(g.TaskID+":"+g.Token)))
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(c)
	if d := time.Since(start); err != nil || d > 3*time.Second {
		t.Errorf("the stalled request held the connection %v (%v), want it ended after about 300ms", d, err)
	}
}

// TestHeadersBounded: a request with headers past the bound is refused
// before anything else.
func TestHeadersBounded(t *testing.T) {
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), MaxHeaderBytes: 1024})
	g := grant(t, p, "task-14")
	status, _ := rawRequest(t, addr, g, "CONNECT", "ok.example.test:443", "X-Big: "+strings.Repeat("a", 64<<10))
	if status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d, want 431", status)
	}
}

// TestCloseEndsTunnels: closing the proxy ends the tunnels it carries,
// and returns once they are recorded.
func TestCloseEndsTunnels(t *testing.T) {
	_, port := registryServer(t)
	target := "127.0.0.1:" + strconv.Itoa(port)
	var logged lockedBuffer
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{target}, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	g := grant(t, p, "task-15")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n", target, base64.StdEncoding.EncodeToString([]byte(g.TaskID+":"+g.Token)))
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	p.Close()
	if !strings.Contains(logged.String(), "taskID=task-15") {
		t.Errorf("Close returned before the tunnel was recorded; log: %q", logged.String())
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("read %v after Close, want EOF", err)
	}
}

// lockedBuffer is a log destination the proxy's handlers and a test may
// share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServesUnixSocket: the proxy serves a unix socket as well as TCP,
// the way into a sandbox that has no network of its own.
func TestServesUnixSocket(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	p, err := New(Config{Resolver: newResolver(nil), Registries: []string{u.Host}, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sock := t.TempDir() + "/proxy.sock"
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go p.Serve(l)
	defer p.Close()
	g := grant(t, p, "task-20")
	tr := &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword(g.TaskID, g.Token), Host: "proxy"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Errorf("over the unix socket: %q", b)
	}
}

// TestGrantCloseWaits: Close returns once the grant's open tunnels have
// ended and been recorded, and refuses the token from then on.
func TestGrantCloseWaits(t *testing.T) {
	_, port := registryServer(t)
	target := "127.0.0.1:" + strconv.Itoa(port)
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{target}})
	g := grant(t, p, "task-21")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nProxy-Authorization: Basic %s\r\n\r\n", target, base64.StdEncoding.EncodeToString([]byte(g.TaskID+":"+g.Token)))
	if resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "CONNECT"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, _, err := g.Close(short); err == nil {
		t.Error("Close returned with a tunnel open")
	}
	time.AfterFunc(50*time.Millisecond, func() { c.Close() })
	ctx, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	recs, _, err := g.Close(ctx)
	if err != nil || len(recs) != 1 || recs[0].Verdict != Allowed {
		t.Errorf("Close: %+v, %v; want the tunnel's record", recs, err)
	}
	if status, _ := rawRequest(t, addr, g, "CONNECT", target); status != http.StatusProxyAuthRequired {
		t.Errorf("a closed grant's token: %d, want 407", status)
	}
}

// TestGrantEnv: the environment a run gets names the proxy with the
// grant's credentials, for every client's spelling.
func TestGrantEnv(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Grant("autocoder-add-1", []string{"*.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	env := g.Env("10.0.0.1:3128")
	want := "http://autocoder-add-1:" + g.Token + "@10.0.0.1:3128"
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	if _, err := p.Grant("t", []string{"*"}); err == nil {
		t.Error("a grant allowing everything was made")
	}
}

// TestForwardNoUpgrade: a plain-HTTP request asking for a protocol
// upgrade is forwarded without the ask, so no connection leaves the
// proxy's accounting (and Close can end every one).
func TestForwardNoUpgrade(t *testing.T) {
	var asked atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Upgrade"))
		io.WriteString(w, "plain")
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	p, addr := startProxy(t, Config{Resolver: newResolver(nil), Registries: []string{u.Host}})
	g := grant(t, p, "task-22")
	status, body := rawRequest(t, addr, g, "GET", srv.URL+"/ws", "Connection: Upgrade", "Upgrade: websocket")
	if status != http.StatusOK || body != "plain" || asked.Load() != "" {
		t.Errorf("status %d, body %q; the registry was asked %q, want no upgrade", status, body, asked.Load())
	}
}
