package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/workflows"
)

// TestWorkerMetricsAndHealth runs `autocoder worker --metrics` against the
// embedded Temporal server and a Postgres store reached through a proxy
// the test can cut. One small task with the bwrap sandbox, in which the
// model writes, runs the tests and finishes, must show in the scrape: the
// SDK's metrics and ours. Then readiness follows its dependencies: 503
// naming the store while the proxy is cut, naming Temporal while it is
// stopped, 200 again once each is back; the process stays alive.
func TestWorkerMetricsAndHealth(t *testing.T) {
	t.Parallel()
	requireBackend(t, "bwrap")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	started := time.Now()

	db := newTCPProxy(t, parseURL(t, freshDatabase(t)))
	opts := devserver.Options{DataDir: t.TempDir(), FrontendPort: testenv.FreePort(t), UIPort: devserver.NoUI,
		SearchAttributes: taskclient.SearchAttributes, Logger: slog.New(slog.DiscardHandler)}
	srv, err := devserver.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start temporal: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })

	model := llmtest.New(t, func(req llmtest.ChatRequest) llmtest.Reply {
		return writeTestFinish.answer("1. Write add in calc.py with its test.", chatView(req))
	})
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	c := &cluster{t: t, bin: binary(t), model: model, env: testenv.ClusterEnv(srv.FrontendAddress(), srv.Namespace(), t.TempDir(), model.URL(),
		"AUTOCODER_SANDBOX=bwrap", "AUTOCODER_DATABASE_URL="+db.url)}
	c.workers = testenv.NewFleet(t, c.bin, c.env, "--metrics", addr, "--sandbox-pool", "1")
	c.startWorker()
	base := "http://" + addr
	waitStatus(ctx, t, base+"/healthz", http.StatusOK, "")
	waitStatus(ctx, t, base+"/readyz", http.StatusOK, "ready")

	id := c.start("--lang", "python", "Write add(a, b) in calc.py, with a pytest test.")
	c.waitFor(id, "success", phase(workflows.PhaseSucceeded))

	// The SDK counts a completed workflow once the server has taken the
	// task that completed it, which can be just after a status shows it.
	m := scrapeUntil(ctx, t, base, func(m scrapeResult) bool { return m.sum("temporal_workflow_completed_total", nil) > 0 })
	for _, name := range []string{"temporal_request_total", "temporal_workflow_completed_total", "temporal_activity_execution_latency_seconds"} {
		if m.sum(name, nil) <= 0 {
			t.Errorf("SDK metric %s: %v, want it scraped with a value", name, m.families[name])
		}
	}
	if typ := m.families["temporal_request_total"].GetType(); typ != dto.MetricType_COUNTER {
		t.Errorf("temporal_request_total is a %s, want a counter", typ)
	}
	const modelName = "openai:gpt-4.1-mini"
	for _, want := range []struct {
		name   string
		labels map[string]string
		value  float64 // 0: any value above 0
	}{
		{"autocoder_tasks_finished_total", map[string]string{"outcome": "succeeded"}, 1},
		{"autocoder_iterations_total", map[string]string{"language": "python", "result": "passed"}, 1},
		{"autocoder_tool_calls_total", map[string]string{"tool": "write"}, 2},
		{"autocoder_tool_calls_total", map[string]string{"tool": "run_tests"}, 1},
		{"autocoder_tool_calls_total", map[string]string{"tool": "finish"}, 1},
		{"autocoder_model_calls_total", map[string]string{"model": modelName}, 4}, // the plan and three turns
		{"autocoder_model_tokens_total", map[string]string{"model": modelName, "kind": "prompt"}, 0},
		{"autocoder_model_tokens_total", map[string]string{"model": modelName, "kind": "completion"}, 0},
		{"autocoder_model_cost_usd_total", map[string]string{"model": modelName}, 0},
		// run_tests and the check: two runs, each a hit or a miss.
		{"autocoder_sandbox_run_seconds_count", map[string]string{"language": "python"}, 2},
		{"autocoder_sandbox_warm_pool_total", map[string]string{"language": "python"}, 2},
	} {
		got := m.sum(want.name, want.labels)
		if (want.value == 0 && got <= 0) || (want.value != 0 && got != want.value) {
			t.Errorf("%s%v = %v, want %v (0: above 0)", want.name, want.labels, got, want.value)
		}
	}
	if s := m.sum("autocoder_sandbox_run_seconds_sum", map[string]string{"language": "python"}); s <= 0 {
		t.Errorf("sandbox run seconds sum %v, want the runs' time", s)
	}

	// A query of the closed task replays its history on the worker: the
	// replay must not count the task again.
	c.status(id)
	if n := scrape(ctx, t, base).sum("autocoder_tasks_finished_total", nil); n != 1 {
		t.Errorf("tasks finished after a status query: %v, want still 1", n)
	}

	db.cut()
	waitStatus(ctx, t, base+"/readyz", http.StatusServiceUnavailable, "not ready: store\n")
	db.restore()
	waitStatus(ctx, t, base+"/readyz", http.StatusOK, "ready")

	if err := srv.Stop(); err != nil {
		t.Fatalf("stop temporal: %v", err)
	}
	waitStatus(ctx, t, base+"/readyz", http.StatusServiceUnavailable, "not ready: temporal\n")
	waitStatus(ctx, t, base+"/healthz", http.StatusOK, "ok")
	restarted, err := devserver.Start(ctx, opts)
	if err != nil {
		t.Fatalf("restart temporal on the same data dir and port: %v", err)
	}
	t.Cleanup(func() { _ = restarted.Stop() })
	waitStatus(ctx, t, base+"/readyz", http.StatusOK, "ready")
	if w := c.workers.Current(); w.Exited() {
		t.Errorf("the worker exited: %v", w.Err())
	}
	t.Logf("metrics and health checked in %s", time.Since(started).Round(time.Millisecond))
}

// writeTestFinish writes add and its test, runs the tests, then finishes.
var writeTestFinish = agent(func(v turnView) llmtest.Reply {
	switch v.turn() {
	case 0:
		return calls(v, "",
			call("write", map[string]any{"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
			call("write", map[string]any{"path": "test_calc.py", "content": calcTest}))
	case 1:
		return calls(v, "", call("run_tests", map[string]any{}))
	case 2:
		return calls(v, "", call("finish", map[string]any{"summary": "add written and tested."}))
	}
	return llmtest.Fail("unexpected turn %d", v.turn())
})

// waitStatus polls url until it answers code with a body that starts with
// prefix, and fails the test with the last answer when ctx ends first.
func waitStatus(ctx context.Context, t *testing.T, url string, code int, prefix string) {
	t.Helper()
	start := time.Now()
	last := "no answer"
	for {
		resp, err := http.Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == code && strings.HasPrefix(string(body), prefix) {
				t.Logf("%s: %d after %s", url, code, time.Since(start).Round(time.Millisecond))
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s never answered %d %q; last: %s", url, code, prefix, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// scrapeResult is a scrape parsed from the Prometheus text format.
type scrapeResult struct {
	families map[string]*dto.MetricFamily
}

func scrape(ctx context.Context, t *testing.T, base string) scrapeResult {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse the scrape: %v", err)
	}
	return scrapeResult{families: families}
}

// scrapeUntil scrapes until done holds of a scrape, for up to ten
// seconds, and returns the last scrape either way.
func scrapeUntil(ctx context.Context, t *testing.T, base string, done func(scrapeResult) bool) scrapeResult {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := scrape(ctx, t, base)
		if done(m) || time.Now().After(deadline) {
			return m
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sum adds up the samples of name whose labels include want. A histogram's
// _count and _sum are read from its family.
func (s scrapeResult) sum(name string, want map[string]string) float64 {
	family, part := name, ""
	if s.families[name] == nil {
		for _, suffix := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && s.families[base] != nil {
				family, part = base, suffix
			}
		}
	}
	total := 0.0
	for _, m := range s.families[family].GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil && part == "_sum":
			total += m.Histogram.GetSampleSum()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		}
	}
	return total
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func parseURL(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// tcpProxy forwards a port to a database, so a test can cut the database
// off (cut) and bring it back (restore) without touching the server.
type tcpProxy struct {
	t      *testing.T
	target string
	addr   string
	url    string

	mu    sync.Mutex
	ln    net.Listener
	conns []net.Conn
}

func newTCPProxy(t *testing.T, db *url.URL) *tcpProxy {
	p := &tcpProxy{t: t, target: db.Host, addr: "127.0.0.1:" + strconv.Itoa(testenv.FreePort(t))}
	proxied := *db
	proxied.Host = p.addr
	p.url = proxied.String()
	p.restore()
	t.Cleanup(p.cut)
	return p
}

// restore listens again on the proxy's address.
func (p *tcpProxy) restore() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy listen: %v", err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(out, in); out.Close() }()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
}

// cut closes the listener and every connection through it.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
