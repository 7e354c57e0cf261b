// Package worker builds and runs the Temporal worker that executes coding
// tasks: the CodingTask workflow and the activities with their dependencies.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/workflows"
)

// Options tune a worker.
type Options struct {
	// MaxConcurrentActivities bounds the model and store activities in
	// flight. Zero is the SDK default. Sandbox runs are bounded by the
	// sandbox's slots instead.
	MaxConcurrentActivities int
	// Namespace is where search attributes are registered at start.
	Namespace string
	// InFlightDir keeps a record of each running activity (see inFlight),
	// so that a worker started after a crash retries the crashed worker's
	// activities at once. Empty: no records.
	InFlightDir string
	// WorkflowsOnly serves workflow tasks (and the local activities they
	// run) but takes no activity: workflows advance and answer queries,
	// while their model calls and sandbox runs wait in the server for a
	// worker that has the settings to run them.
	WorkflowsOnly bool
	// Metrics counts the tasks that end; nil counts nothing.
	Metrics TaskMetrics
	// StoreID is the ID of the store the activities read, which the
	// worker names in its identity (taskclient.WorkerIdentity) for
	// clients to compare with theirs. Empty: the SDK's identity.
	StoreID string
}

// Worker serves the task queue (the workflow, model and store activities)
// and, unless WorkflowsOnly, its sandbox task queue (checks, and the tool loop's run and
// run_tests calls). It takes no more
// sandbox runs than the sandbox has slots, so runs beyond them wait in the
// server, where any worker with a free slot takes them and a crashed
// worker holds none.
type Worker struct {
	main, sandbox sdkworker.Worker
	inFlight      *inFlight // nil: no records
}

// New registers the workflow and the activities on a worker for the task
// queue and its sandbox task queue.
func New(c client.Client, acts *activities.Activities, opts Options) *Worker {
	w := &Worker{}
	var interceptors []interceptor.WorkerInterceptor
	if opts.InFlightDir != "" {
		w.inFlight = newInFlight(c, opts.InFlightDir)
		interceptors = append(interceptors, w.inFlight)
	}
	if opts.Metrics != nil {
		interceptors = append(interceptors, &countOutcomes{metrics: opts.Metrics})
	}
	var identity string
	if opts.StoreID != "" {
		identity = taskclient.WorkerIdentity(opts.StoreID)
	}
	main := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{
		Identity:                           identity,
		Interceptors:                       interceptors,
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		// Pollers scale with the work the server reports, so a burst of new
		// tasks is not served by two pollers.
		WorkflowTaskPollerBehavior: sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{}),
		ActivityTaskPollerBehavior: sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{}),
		// In-flight activities get this long to finish on shutdown.
		WorkerStopTimeout:       30 * time.Second,
		LocalActivityWorkerOnly: opts.WorkflowsOnly,
	})
	Register(main, acts)
	w.main = main
	if opts.WorkflowsOnly {
		return w
	}
	slots := 1
	if acts.Sandbox != nil {
		slots = acts.Sandbox.Slots()
	}
	sandbox := sdkworker.New(c, workflows.SandboxTaskQueue(workflows.TaskQueue), sdkworker.Options{
		Identity:                           identity,
		Interceptors:                       interceptors,
		MaxConcurrentActivityExecutionSize: slots,
		DisableWorkflowWorker:              true,
		WorkerStopTimeout:                  30 * time.Second,
	})
	registerSandbox(sandbox, acts)
	w.sandbox = sandbox
	return w
}

// Start fails the activities that crashed workers left running, so that
// they are retried at once, then starts polling both task queues.
func (w *Worker) Start() error {
	if w.inFlight != nil {
		w.inFlight.start()
	}
	if err := w.main.Start(); err != nil {
		return err
	}
	if w.sandbox == nil {
		return nil
	}
	if err := w.sandbox.Start(); err != nil {
		w.main.Stop()
		return fmt.Errorf("sandbox task queue: %w", err)
	}
	return nil
}

// Stop stops polling and waits for in-flight activities, up to 30 s.
func (w *Worker) Stop() {
	done := make(chan struct{})
	go func() {
		if w.sandbox != nil {
			w.sandbox.Stop()
		}
		close(done)
	}()
	w.main.Stop()
	<-done
}

// Registry is what Register needs of a worker or a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivity(a any)
}

// Register adds the workflow and activities to r.
func Register(r Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.CodingTask, workflows.RegisterOptions())
	r.RegisterWorkflowWithOptions(workflows.Notification, workflows.NotificationRegisterOptions())
	r.RegisterActivity(acts)
}

// registerSandbox adds the activities that run in the sandbox.
func registerSandbox(w sdkworker.Worker, acts *activities.Activities) {
	for name, fn := range map[string]any{"Check": acts.Check, "Execute": acts.Execute, "SandboxCall": acts.SandboxCall, "Setup": acts.Setup} {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// Run runs the worker until ctx is done, then stops it gracefully.
func Run(ctx context.Context, c client.Client, acts *activities.Activities, opts Options) error {
	if _, err := taskclient.EnsureSearchAttributes(ctx, c, opts.Namespace); err != nil {
		slog.Warn("custom search attributes unavailable", "error", err)
	}
	w := New(c, acts, opts)
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	slog.Info("worker started", "taskQueue", workflows.TaskQueue)
	<-ctx.Done()
	slog.Info("worker stopping: waiting for in-flight activities")
	w.Stop()
	return nil
}
