// Package worker builds and runs the Temporal worker that executes coding
// tasks: the CodingTask workflow and the activities with their dependencies.
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/workflows"
)

// Options tune a worker.
type Options struct {
	// MaxConcurrentActivities bounds activities in flight; sandbox slots
	// bound the expensive ones separately. Zero is the SDK default.
	MaxConcurrentActivities int
	// Namespace is where search attributes are registered at start.
	Namespace string
}

// New registers the workflow and the activities on a worker for the task queue.
func New(c client.Client, acts *activities.Activities, opts Options) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, sdkworker.Options{
		MaxConcurrentActivityExecutionSize: opts.MaxConcurrentActivities,
		// In-flight activities get this long to finish on shutdown.
		WorkerStopTimeout: 30 * time.Second,
	})
	Register(w, acts)
	return w
}

// Registry is what Register needs of a worker or a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivity(a any)
}

// Register adds the workflow and activities to r.
func Register(r Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.CodingTask, workflows.RegisterOptions())
	r.RegisterActivity(acts)
}

// Run runs the worker until ctx is done, then stops it gracefully.
func Run(ctx context.Context, c client.Client, acts *activities.Activities, opts Options) error {
	if _, err := EnsureSearchAttributes(ctx, c, opts.Namespace); err != nil {
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
