// Package workflows holds the CodingTask workflow: the deterministic story
// of a task, from plan to passing tests.
package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// ErrTypeIterationsExhausted marks a task that ran out of attempts.
const ErrTypeIterationsExhausted = "IterationsExhausted"

// a is the nil receiver through which the workflow names activities.
var a *activities.Activities

// task is the workflow's whole state. File contents never enter it: the
// workspace is a snapshot id in the store.
type task struct {
	in       TaskInput
	status   Status
	snapshot string // last good snapshot: the input, then each passing step
}

// CodingTask plans the task, then for each plan step generates code,
// validates it, runs the tests and, on failure, reflects and tries again,
// checkpointing every attempt, until the tests pass or the iterations run out.
func CodingTask(ctx workflow.Context, in TaskInput) (TaskResult, error) {
	t, err := newTask(in)
	if err != nil {
		return TaskResult{}, err
	}
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (Status, error) { return t.status, nil }); err != nil {
		return TaskResult{}, fmt.Errorf("register status query: %w", err)
	}
	res, err := t.run(ctx)
	if err != nil {
		t.finish(ctx, err)
		return TaskResult{}, err
	}
	return res, nil
}

func newTask(in TaskInput) (*task, error) {
	if strings.TrimSpace(in.Task) == "" {
		return nil, temporal.NewNonRetryableApplicationError("task text is empty", activities.ErrTypeBadInput, nil)
	}
	if in.Language != "python" && in.Language != "go" {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("unsupported language %q (want python or go)", in.Language), activities.ErrTypeBadInput, nil)
	}
	if in.MaxIterations <= 0 {
		in.MaxIterations = DefaultMaxIterations
	}
	return &task{
		in:       in,
		snapshot: in.InputSnapshot,
		status: Status{
			Task:          in.Task,
			Language:      in.Language,
			Phase:         PhaseStarting,
			MaxIterations: in.MaxIterations,
			TestsByModel:  in.TestCmd == "",
		},
	}, nil
}

func (t *task) run(ctx workflow.Context) (TaskResult, error) {
	t.setPhase(ctx, PhasePlanning)
	var plan activities.PlanOutput
	err := workflow.ExecuteActivity(modelCtx(ctx, "plan"), a.Plan, activities.PlanInput{
		Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
		InputSnapshot: t.in.InputSnapshot, Model: t.in.Model,
	}).Get(ctx, &plan)
	if err != nil {
		return TaskResult{}, fmt.Errorf("plan: %w", err)
	}
	t.status.Plan = plan.Steps
	t.status.Usage.Add(plan.Usage)

	for step := 1; step <= len(plan.Steps); step++ {
		t.status.Step = step
		if err := t.runStep(ctx); err != nil {
			return TaskResult{}, err
		}
	}
	t.setPhase(ctx, PhaseSucceeded)
	return TaskResult{
		SnapshotID:   t.snapshot,
		Iterations:   t.status.Iteration,
		TestsByModel: t.status.TestsByModel,
		Status:       t.status,
	}, nil
}

// runStep loops generate → validate → execute → reflect until the step's
// tests pass. Each attempt builds on the previous one's files, so the model
// repairs its own code rather than starting over.
func (t *task) runStep(ctx workflow.Context) error {
	base := t.snapshot
	feedback := ""
	for {
		if t.status.Iteration >= t.in.MaxIterations {
			return t.exhausted()
		}
		t.status.Iteration++
		it := t.status.Iteration

		t.setPhase(ctx, PhaseGenerating)
		var gen activities.GenerateOutput
		err := workflow.ExecuteActivity(modelCtx(ctx, t.label("generate")), a.Generate, activities.GenerateInput{
			Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
			Plan: t.status.Plan, Step: t.status.Step, Iteration: it,
			BaseSnapshot: base, Feedback: feedback, Model: t.in.Model,
		}).Get(ctx, &gen)
		if err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		t.status.Usage.Add(gen.Usage)

		result, err := t.check(ctx, gen)
		if err != nil {
			return err
		}
		t.checkpoint(ctx, gen.SnapshotID, result)
		if result.Passed {
			t.snapshot = gen.SnapshotID
			return nil
		}
		if gen.SnapshotID != "" {
			base = gen.SnapshotID
		}

		t.setPhase(ctx, PhaseReflecting)
		var refl activities.ReflectOutput
		err = workflow.ExecuteActivity(modelCtx(ctx, t.label("reflect")), a.Reflect, activities.ReflectInput{
			Task: t.in.Task, Language: t.in.Language, Plan: t.status.Plan, Step: t.status.Step,
			Iteration: it, SnapshotID: base, Failure: result, Model: t.in.Model,
		}).Get(ctx, &refl)
		if err != nil {
			return fmt.Errorf("reflect: %w", err)
		}
		t.status.Usage.Add(refl.Usage)
		feedback = refl.Reflection
	}
}

// check validates and then tests a generated snapshot.
func (t *task) check(ctx workflow.Context, gen activities.GenerateOutput) (activities.TestSummary, error) {
	if gen.Rejected != "" {
		return activities.TestSummary{Stage: "generate", ExitCode: 1, Output: gen.Rejected}, nil
	}
	in := activities.CheckInput{SnapshotID: gen.SnapshotID, Language: t.in.Language, TestCmd: t.in.TestCmd}

	t.setPhase(ctx, PhaseValidating)
	var result activities.TestSummary
	if err := workflow.ExecuteActivity(sandboxCtx(ctx, t.label("validate")), a.Validate, in).Get(ctx, &result); err != nil {
		return result, fmt.Errorf("validate: %w", err)
	}
	if !result.Passed {
		return result, nil
	}
	t.setPhase(ctx, PhaseExecuting)
	if err := workflow.ExecuteActivity(sandboxCtx(ctx, t.label("test")), a.Execute, in).Get(ctx, &result); err != nil {
		return result, fmt.Errorf("execute: %w", err)
	}
	return result, nil
}

func (t *task) checkpoint(ctx workflow.Context, snapshot string, result activities.TestSummary) {
	t.status.LastTest = &result
	t.status.Checkpoints = append(t.status.Checkpoints, Checkpoint{
		N:          len(t.status.Checkpoints) + 1,
		SnapshotID: snapshot,
		Step:       t.status.Step,
		Iteration:  t.status.Iteration,
		Passed:     result.Passed,
		Summary:    result.Headline(),
		Time:       workflow.Now(ctx),
	})
}

func (t *task) exhausted() error {
	msg := fmt.Sprintf("no passing attempt after %d iterations (step %d of %d)", t.status.Iteration, t.status.Step, len(t.status.Plan))
	if lt := t.status.LastTest; lt != nil {
		msg += fmt.Sprintf("; last result: %s\n%s", lt.Headline(), lt.Output)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeIterationsExhausted, nil, t.status)
}

// finish records how the task ended, for the status query.
func (t *task) finish(ctx workflow.Context, err error) {
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) || errors.Is(ctx.Err(), workflow.ErrCanceled) {
		t.setPhase(ctx, PhaseCancelled)
		t.status.Error = "cancelled"
		return
	}
	t.setPhase(ctx, PhaseFailed)
	t.status.Error = rootMessage(err)
}

func (t *task) setPhase(ctx workflow.Context, p Phase) {
	t.status.Phase = p
	details := fmt.Sprintf("**%s** — step %d/%d, iteration %d/%d", p, t.status.Step, len(t.status.Plan), t.status.Iteration, t.in.MaxIterations)
	if lt := t.status.LastTest; lt != nil {
		details += "\n\nlast result: " + lt.Headline()
	}
	workflow.SetCurrentDetails(ctx, details)
}

func (t *task) label(kind string) string {
	return fmt.Sprintf("%s step %d attempt %d", kind, t.status.Step, t.status.Iteration)
}

// rootMessage digs out the innermost application error's message, which is
// the one written for people.
func rootMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// Model calls stream and heartbeat, so a dead worker is noticed within the
// heartbeat timeout; retries are Temporal's alone.
func modelCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    2 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
			MaximumAttempts:    6,
			NonRetryableErrorTypes: []string{
				activities.ErrTypeModelAuth, activities.ErrTypeModelRequest,
				activities.ErrTypeModelConfig, activities.ErrTypeBadInput,
			},
		},
	})
}

// Sandbox runs are bounded by the sandbox's own wall clock; the activity
// timeout only has to outlast it.
func sandboxCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadInput},
		},
	})
}

// RegisterOptions names the workflow for registration.
func RegisterOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: WorkflowName}
}
