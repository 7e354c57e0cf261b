package starter

import (
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/client"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/metrics"
	"github.com/autocoder/autocoder/worker"
)

// startMetrics builds the worker's metrics when worker.metrics_address
// names where to serve them. It comes before the worker's Temporal client
// is dialled, which reports the SDK's metrics to it, and before its
// activities are assembled, which record autocoder's.
func (f *Factory) startMetrics() error {
	if f.cfg.MetricsAddress == "" {
		return nil
	}
	reg, err := metrics.New()
	if err != nil {
		return fmt.Errorf("%w: metrics: %v", errUnavailable, err)
	}
	f.metrics = reg
	return nil
}

// instrument hands the metrics to what records them: the activities, the
// sandbox (Activities gives it sc.Metrics) and the worker.
func (f *Factory) instrument(acts *activities.Activities, o *worker.Options) {
	if f.metrics != nil {
		acts.Metrics, o.Metrics = f.metrics, f.metrics
	}
}

// serveEndpoints serves /metrics, /healthz and /readyz for a worker that
// runs with c and acts; the returned stop ends them. Without metrics it
// serves nothing.
func (f *Factory) serveEndpoints(c client.Client, acts *activities.Activities) (stop func(), err error) {
	if f.metrics == nil {
		return func() {}, nil
	}
	e, err := worker.Serve(f.cfg.MetricsAddress, f.metrics.Handler(), worker.ReadinessChecks(c, acts.Store, acts.Sandbox))
	if err != nil {
		return nil, fmt.Errorf("%w: %v; choose another address with --metrics or %s (worker.metrics_address)",
			errUnavailable, err, envMetricsAddress)
	}
	slog.Info("serving metrics and health", "metrics", "http://"+e.Addr()+"/metrics", "ready", "http://"+e.Addr()+"/readyz")
	return func() {
		if err := e.Close(); err != nil {
			slog.Warn("stop metrics and health endpoints", "error", err)
		}
		if err := f.metrics.Close(); err != nil {
			slog.Warn("stop metrics", "error", err)
		}
	}, nil
}
