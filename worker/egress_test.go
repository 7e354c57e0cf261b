package worker

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/egress"
)

// TestEgressServesGrants: the worker's proxy carries a granted run's
// request to a named registry, and after Close accepts nothing.
func TestEgressServesGrants(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "index") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	e, err := StartEgress(egress.Config{Registries: []string{u.Host}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g, err := e.Proxy.Grant("task-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(g.Env(e.Addr)["HTTP_PROXY"])
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: 10 * time.Second}
	resp, err := client.Get(srv.URL + "/simple/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "index" {
		t.Errorf("through the worker's proxy: %d %q", resp.StatusCode, b)
	}
	if recs, _ := g.Records(); len(recs) != 1 || recs[0].Verdict != egress.Allowed {
		t.Errorf("records %+v", recs)
	}
	if err := e.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if c, err := net.DialTimeout("tcp", e.Addr, time.Second); err == nil {
		c.Close()
		t.Error("the proxy still accepts connections after Close")
	}
}

// TestEgressRefusesBadRules: a rule the proxy cannot read stops the start.
func TestEgressRefusesBadRules(t *testing.T) {
	if _, err := StartEgress(egress.Config{Allow: []string{"bad host"}}, "127.0.0.1:0"); err == nil {
		t.Error("started with a bad allow rule")
	}
}

// TestRouteServesOneRun: a route's socket, which a sandbox user can
// reach, carries the run's requests with its grant; Close returns their
// record, and the socket and its token are gone after it.
func TestRouteServesOneRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "index") }))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	e, err := StartEgress(egress.Config{Registries: []string{u.Host}}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	e.CABundle = "/etc/ssl/certs/ca-certificates.crt"
	r, err := e.Route("task-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(r.Socket); err != nil || fi.Mode()&0o777 != 0o666 {
		t.Fatalf("the route's socket: %v %v", fi, err)
	}
	if got := r.Sandbox(); got.Socket != r.Socket || got.Proxy != r.Grant || got.CABundle != e.CABundle {
		t.Errorf("Sandbox() = %+v", got)
	}
	get := func() (*http.Response, error) {
		pu, _ := url.Parse(r.Grant.ProxyURL("sandbox:3128"))
		tr := &http.Transport{Proxy: http.ProxyURL(pu), DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", r.Socket)
		}}
		defer tr.CloseIdleConnections()
		return (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(srv.URL + "/simple/")
	}
	resp, err := get()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "index" {
		t.Errorf("through the route: %d %q", resp.StatusCode, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs, _, err := r.Close(ctx)
	if err != nil || len(recs) != 1 || recs[0].TaskID != "task-1" || recs[0].Verdict != egress.Allowed {
		t.Errorf("the route's record: %+v %v", recs, err)
	}
	if _, err := os.Stat(filepath.Dir(r.Socket)); !os.IsNotExist(err) {
		t.Errorf("the socket's directory after Close: %v", err)
	}
	if _, err := get(); err == nil {
		t.Error("the route still carries requests after Close")
	}
}

// TestRemoveStaleRoutes: a route directory whose socket nobody listens on
// goes once it is a minute old; a live one, and a new one, stay.
func TestRemoveStaleRoutes(t *testing.T) {
	dir := t.TempDir()
	route := func(name string, listening bool, age time.Duration) string {
		path := filepath.Join(dir, name)
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("unix", filepath.Join(path, "proxy.sock"))
		if err != nil {
			t.Fatal(err)
		}
		if listening {
			t.Cleanup(func() { l.Close() })
		} else {
			// As a killed worker leaves it: the socket's file, nobody on it.
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			l.Close()
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dead := route(routePrefix+"dead", false, 2*time.Minute)
	live := route(routePrefix+"live", true, 2*time.Minute)
	young := route(routePrefix+"young", false, 0)
	other := route("not-a-route", false, 2*time.Minute)
	empty := filepath.Join(dir, routePrefix+"empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(empty, old, old); err != nil {
		t.Fatal(err)
	}

	if n := RemoveStaleRoutes(dir); n != 2 {
		t.Errorf("removed %d, want 2 (the dead route and the empty one)", n)
	}
	for path, want := range map[string]bool{dead: false, empty: false, live: true, young: true, other: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", filepath.Base(path), err == nil, want)
		}
	}
}
