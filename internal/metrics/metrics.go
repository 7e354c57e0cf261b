// Package metrics is a worker's Prometheus registry: the Temporal SDK's
// own metrics, taken through its OpenTelemetry handler, and autocoder's.
// It is the one package that imports Prometheus; the packages that do the
// work record through small interfaces of their own, which Registry
// satisfies.
package metrics

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
)

// Registry holds every metric of a worker process. Its methods do nothing
// on a nil Registry, the worker without --metrics.
type Registry struct {
	reg      *prometheus.Registry
	provider *sdkmetric.MeterProvider
	temporal client.MetricsHandler

	tasks      *prometheus.CounterVec
	iterations *prometheus.CounterVec
	toolCalls  *prometheus.CounterVec
	modelCalls *prometheus.CounterVec
	tokens     *prometheus.CounterVec
	costUSD    *prometheus.CounterVec
	sandboxRun *prometheus.HistogramVec
	warmPool   *prometheus.CounterVec
}

// sdkSecondsBuckets are the bounds of the SDK's latency histograms, which
// it records in seconds; OpenTelemetry's default bounds (0 to 10000) are
// made for milliseconds and would put every call in the first buckets.
var sdkSecondsBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// sandboxSecondsBuckets span a sandbox run: a warm Python test in a
// fraction of a second to a cold build of minutes.
var sandboxSecondsBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}

// New builds the registry: the Go runtime's and the process's metrics,
// the Temporal SDK's (TemporalHandler) and autocoder's.
func New() (*Registry, error) {
	reg := prometheus.NewRegistry()
	// The SDK's counters are OpenTelemetry monotonic counters, so they are
	// exported as Prometheus counters (_total) that rate() works on, not
	// as gauges; its timers become histograms in seconds.
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
		otelprom.WithAggregationSelector(func(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
			if k == sdkmetric.InstrumentKindHistogram {
				return sdkmetric.AggregationExplicitBucketHistogram{Boundaries: sdkSecondsBuckets}
			}
			return sdkmetric.DefaultAggregationSelector(k)
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	r := &Registry{
		reg:      reg,
		provider: provider,
		temporal: temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
			Meter:                provider.Meter("temporal-sdk-go"),
			UseMonotonicCounters: true,
		}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "autocoder_tasks_finished_total",
			Help: "Tasks this worker saw end, by outcome (succeeded, failed, cancelled).",
		}, []string{"outcome"}),
		iterations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "autocoder_iterations_total",
			Help: "Attempts checked (one per iteration), by language and result (passed, failed).",
		}, []string{"language", "result"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "autocoder_tool_calls_total",
			Help: "Tool calls the model made, by tool (unknown: a tool not offered).",
		}, []string{"tool"}),
		modelCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "autocoder_model_calls_total",
			Help: "Model calls answered, by model (provider:name); answers reused from a memo are not counted.",
		}, []string{"model"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "autocoder_model_tokens_total",
			Help: "Tokens of the model calls, by model and kind (prompt, completion).",
		}, []string{"model", "kind"}),
		costUSD: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "autocoder_model_cost_usd_total",
			Help: "Cost of the model calls in US dollars at list prices, by model; a model without a known price adds nothing.",
		}, []string{"model"}),
		sandboxRun: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "autocoder_sandbox_run_seconds",
			Help:    "Sandbox runs, from the start of the sandbox (or the take of a warm one) to the result, by language; the wait for a slot is not counted.",
			Buckets: sandboxSecondsBuckets,
		}, []string{"language"}),
		warmPool: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "autocoder_sandbox_warm_pool_total",
			Help: "Sandbox runs by language and whether a warm sandbox served them (hit) or one was started for them (miss).",
		}, []string{"language", "result"}),
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.tasks, r.iterations, r.toolCalls, r.modelCalls, r.tokens, r.costUSD, r.sandboxRun, r.warmPool,
	)
	return r, nil
}

// TemporalHandler is the handler to give the Temporal client
// (client.Options.MetricsHandler): the SDK's metrics land here.
func (r *Registry) TemporalHandler() client.MetricsHandler {
	if r == nil {
		return nil
	}
	return r.temporal
}

// Handler serves the registry in the Prometheus text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{})
}

// Close stops the SDK metrics' pipeline.
func (r *Registry) Close() error {
	if r == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.provider.Shutdown(ctx)
}

// TaskFinished counts a task that ended with outcome.
func (r *Registry) TaskFinished(outcome string) {
	if r != nil {
		r.tasks.WithLabelValues(outcome).Inc()
	}
}

// Iteration counts an attempt's check.
func (r *Registry) Iteration(language string, passed bool) {
	if r != nil {
		r.iterations.WithLabelValues(language, passedOrFailed(passed)).Inc()
	}
}

// ToolCall counts a call the model made.
func (r *Registry) ToolCall(tool string) {
	if r != nil {
		r.toolCalls.WithLabelValues(tool).Inc()
	}
}

// ModelCall counts an answered model call, its tokens and its cost.
func (r *Registry) ModelCall(model string, promptTokens, completionTokens int, costUSD float64) {
	if r == nil {
		return
	}
	r.modelCalls.WithLabelValues(model).Inc()
	r.tokens.WithLabelValues(model, "prompt").Add(float64(max(promptTokens, 0)))
	r.tokens.WithLabelValues(model, "completion").Add(float64(max(completionTokens, 0)))
	r.costUSD.WithLabelValues(model).Add(max(costUSD, 0))
}

// SandboxRun observes how long a run of language took.
func (r *Registry) SandboxRun(language string, took time.Duration) {
	if r != nil {
		r.sandboxRun.WithLabelValues(language).Observe(took.Seconds())
	}
}

// WarmPool counts a run that a warm sandbox served (hit) or not.
func (r *Registry) WarmPool(language string, hit bool) {
	if r == nil {
		return
	}
	result := "miss"
	if hit {
		result = "hit"
	}
	r.warmPool.WithLabelValues(language, result).Inc()
}

func passedOrFailed(passed bool) string {
	if passed {
		return "passed"
	}
	return "failed"
}
