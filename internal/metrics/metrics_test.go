package metrics

import (
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The SDK's counters reach Prometheus as counters and its timers as
// histograms in seconds, next to autocoder's own metrics.
func TestScrapeHasTheSDKsAndOurs(t *testing.T) {
	r, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	sdk := r.TemporalHandler().WithTags(map[string]string{"operation": "PollWorkflowTaskQueue"})
	sdk.Counter("temporal_request").Inc(3)
	sdk.Timer("temporal_request_latency").Record(40 * time.Millisecond)
	r.TaskFinished("succeeded")
	r.Iteration("python", true)
	r.ToolCall("write")
	r.ModelCall("openai:gpt-4.1-mini", 100, 20, 0.5)
	r.SandboxRun("go", 1500*time.Millisecond)
	r.WarmPool("go", false)

	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var p expfmt.TextParser
	families, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for name, typ := range map[string]dto.MetricType{
		"temporal_request_total":            dto.MetricType_COUNTER,
		"temporal_request_latency_seconds":  dto.MetricType_HISTOGRAM,
		"autocoder_tasks_finished_total":    dto.MetricType_COUNTER,
		"autocoder_iterations_total":        dto.MetricType_COUNTER,
		"autocoder_tool_calls_total":        dto.MetricType_COUNTER,
		"autocoder_model_calls_total":       dto.MetricType_COUNTER,
		"autocoder_model_tokens_total":      dto.MetricType_COUNTER,
		"autocoder_model_cost_usd_total":    dto.MetricType_COUNTER,
		"autocoder_sandbox_run_seconds":     dto.MetricType_HISTOGRAM,
		"autocoder_sandbox_warm_pool_total": dto.MetricType_COUNTER,
		"go_goroutines":                     dto.MetricType_GAUGE,
	} {
		f := families[name]
		if f == nil {
			t.Errorf("%s missing from the scrape", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %s, want a %s", name, f.GetType(), typ)
		}
	}
	if t.Failed() {
		return
	}
	if v := families["temporal_request_total"].GetMetric()[0].GetCounter().GetValue(); v != 3 {
		t.Errorf("temporal_request_total = %v, want 3", v)
	}
	// 40 ms falls in the 50 ms bucket, not in OpenTelemetry's default
	// first bucket of 0 to 5 (made for milliseconds).
	h := families["temporal_request_latency_seconds"].GetMetric()[0].GetHistogram()
	for _, b := range h.GetBucket() {
		if b.GetUpperBound() == 0.025 && b.GetCumulativeCount() != 0 || b.GetUpperBound() == 0.05 && b.GetCumulativeCount() != 1 {
			t.Errorf("latency bucket le=%v holds %d", b.GetUpperBound(), b.GetCumulativeCount())
		}
	}
	if len(h.GetBucket()) != len(sdkSecondsBuckets)+1 { // and +Inf
		t.Errorf("latency histogram has %d buckets, want the %d second-scale ones and +Inf", len(h.GetBucket()), len(sdkSecondsBuckets))
	}
}

// A worker without --metrics has a nil registry: recording does nothing.
func TestNilRegistryRecordsNothing(t *testing.T) {
	var r *Registry
	r.TaskFinished("failed")
	r.Iteration("go", false)
	r.ToolCall("run")
	r.ModelCall("m", 1, 1, 1)
	r.SandboxRun("go", time.Second)
	r.WarmPool("go", true)
	if r.TemporalHandler() != nil || r.Close() != nil {
		t.Error("a nil registry has a handler or fails to close")
	}
}
