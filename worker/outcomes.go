package worker

import (
	"errors"

	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/workflows"
)

// Outcomes of a task, as TaskMetrics are told them.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// TaskMetrics counts the tasks this worker sees end.
type TaskMetrics interface {
	TaskFinished(outcome string)
}

// countOutcomes counts each task's outcome as its workflow returns. The
// workflow's code is left alone: the count happens around it, and only
// when the return is new, never while a history is replayed (a worker
// taking over a task, a query on a closed one), so a task counts once.
// A run that continues as new has not finished.
type countOutcomes struct {
	interceptor.WorkerInterceptorBase
	metrics TaskMetrics
}

func (c *countOutcomes) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &countOutcome{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, metrics: c.metrics}
}

type countOutcome struct {
	interceptor.WorkflowInboundInterceptorBase
	metrics TaskMetrics
}

func (c *countOutcome) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	res, err := c.Next.ExecuteWorkflow(ctx, in)
	if !workflow.IsReplaying(ctx) && !workflow.IsContinueAsNewError(err) {
		c.metrics.TaskFinished(outcome(ctx, err))
	}
	return res, err
}

// outcome names how a task ended, as its status does: a cancel (at once,
// or after the current step) is cancelled, any other error failed.
func outcome(ctx workflow.Context, err error) string {
	var canceled *temporal.CanceledError
	var app *temporal.ApplicationError
	switch {
	case err == nil:
		return OutcomeSucceeded
	case errors.As(err, &canceled), errors.Is(ctx.Err(), workflow.ErrCanceled),
		errors.As(err, &app) && app.Type() == workflows.ErrTypeCancelled:
		return OutcomeCancelled
	}
	return OutcomeFailed
}
