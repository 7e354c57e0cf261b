package starter

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/testenv"
)

// The local server's worker serves metrics and health when
// worker.metrics_address is set, and stops serving them with the server.
func TestLocalServerServesMetricsAndHealth(t *testing.T) {
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))
	f := NewFactory(config{DataDir: dir, Namespace: "default", Sandbox: "bwrap", uiPort: devserver.NoUI, MetricsAddress: addr},
		IOStreams{Out: io.Discard, ErrOut: io.Discard})
	defer f.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	lock, err := devserver.LockStart(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	served := make(chan error, 1)
	go func() { served <- f.serve(ctx, lock, 0, false, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-served:
		testenv.RequireService(t, "local server with a bwrap sandbox", err)
		t.Fatal("serve returned before it was ready")
	}

	base := "http://" + addr
	if code, body := httpGet(t, base+"/readyz"); code != http.StatusOK || !strings.HasPrefix(body, "ready\n") ||
		!strings.Contains(body, "temporal: ok") || !strings.Contains(body, "store: ok") || !strings.Contains(body, "sandbox: ok") {
		t.Errorf("/readyz = %d %q; want 200 with temporal, store and sandbox ok", code, body)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	// The worker has called Temporal by now (it describes the namespace as
	// it starts); its pollers' gauges are there at once.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body := httpGet(t, base+"/metrics")
		if strings.Contains(body, "# TYPE temporal_request_total counter") && strings.Contains(body, "temporal_worker_task_slots_available{") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics has no SDK request counter or slot gauge:\n%s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}

	stop()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	if resp, err := http.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("/healthz answers %d after the server stopped", resp.StatusCode)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}
