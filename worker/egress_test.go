package worker

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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
