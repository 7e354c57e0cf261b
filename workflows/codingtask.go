// Package workflows holds the CodingTask workflow: the deterministic story
// of a task, from plan to passing tests.
package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/tools"
)

// Error types a task can end with.
const (
	ErrTypeIterationsExhausted = "IterationsExhausted"
	ErrTypeBudgetExceeded      = "BudgetExceeded"
	ErrTypePlanRejected        = "PlanRejected"
	ErrTypeCancelled           = "Cancelled"
)

// a is the nil receiver through which the workflow names activities.
var a *activities.Activities

// CodingTask plans the task, then for each plan step makes attempts, each
// checked and checkpointed, until the step's check passes or the iterations
// run out. People steer it with signals (approve, reject, feedback, cancel)
// and the rollback update.
func CodingTask(ctx workflow.Context, in TaskInput) (TaskResult, error) {
	t, err := newTask(in)
	if err != nil {
		return TaskResult{}, err
	}
	if in.Carried == nil {
		t.Status.Started = workflow.Now(ctx)
	}
	if err := t.registerHandlers(ctx); err != nil {
		return TaskResult{}, err
	}
	res, err := t.run(ctx)
	if err != nil {
		if workflow.IsContinueAsNewError(err) {
			return TaskResult{}, err
		}
		t.finish(ctx, err)
		t.notifyEnd(ctx)
		return TaskResult{}, err
	}
	return res, nil
}

func (t *task) run(ctx workflow.Context) (TaskResult, error) {
	if t.Status.Plan == nil {
		if err := t.setup(ctx); err != nil {
			return TaskResult{}, err
		}
		if err := t.plan(ctx); err != nil {
			return TaskResult{}, err
		}
	}
	for t.Status.Step <= len(t.Status.Plan) {
		if t.rollback != nil {
			t.applyRollback()
			continue
		}
		if err := t.stopIfCancelled(); err != nil {
			return TaskResult{}, err
		}
		if t.historyFull(ctx) {
			return TaskResult{}, t.continueAsNew(ctx)
		}
		if t.Status.Iteration >= t.in.MaxIterations && !t.Conversation.Working {
			if err := t.stuck(ctx); err != nil {
				return TaskResult{}, err
			}
			continue
		}
		if err := t.attempt(ctx); err != nil {
			return TaskResult{}, err
		}
	}
	t.saveLessons(ctx, true)
	t.Status.Step = len(t.Status.Plan) // the loop leaves it one past the last step
	t.setPhase(ctx, PhaseSucceeded)
	t.notifyEnd(ctx)
	// Signals of this last workflow task may not have reached the signal
	// loop: the status returned has them too.
	t.drainSignals(ctx)
	return TaskResult{
		SnapshotID:   t.Base,
		Iterations:   t.Status.Iteration,
		TestsByModel: t.Status.TestsByModel,
		Status:       t.Status,
	}, nil
}

// plan asks for a plan and, when the task wants it, a person's approval; a
// rejected plan is made again with the reason as guidance. The first plan
// recalls the task's lessons too.
func (t *task) plan(ctx workflow.Context) error {
	for rejections := 0; ; rejections++ {
		t.setPhase(ctx, PhasePlanning)
		var plan activities.PlanOutput
		err := workflow.ExecuteActivity(modelCtx(ctx, "plan"), a.Plan, activities.PlanInput{
			Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
			InputSnapshot: t.start(), Model: t.models(), Guidance: t.Status.Feedback,
			Lessons: t.Memory.TaskLessons, RecallLessons: rejections == 0,
		}).Get(ctx, &plan)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		if plan.Lessons != nil {
			t.Memory.TaskLessons = t.useLessons(*plan.Lessons)
		}
		t.Status.Plan = plan.Steps
		t.Status.Step = 1
		if err := t.spend(ctx, plan.Usage); err != nil {
			return err
		}
		if err := t.stopIfCancelled(); err != nil {
			return err
		}
		if !t.in.ApprovePlan {
			return nil
		}
		d, err := t.ask(ctx, GatePlan, "Approve this plan?", numbered(plan.Steps))
		if err != nil {
			return err
		}
		if d.approved {
			return nil
		}
		if rejections+1 >= maxPlanRejections {
			return temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("plan rejected %d times; last reason: %s", rejections+1, d.text), ErrTypePlanRejected, nil)
		}
		if d.text != "" {
			t.Status.Feedback = append(t.Status.Feedback, "The previous plan was rejected: "+d.text)
		}
	}
}

func (t *task) checkpoint(ctx workflow.Context, snapshot string, result activities.TestSummary) {
	t.Status.LastTest = &result
	t.Status.Checkpoints = append(t.Status.Checkpoints, Checkpoint{
		N:          len(t.Status.Checkpoints) + 1,
		SnapshotID: snapshot,
		Step:       t.Status.Step,
		Iteration:  t.Status.Iteration,
		Passed:     result.Passed,
		Summary:    result.Headline(),
		Findings:   result.Findings,
		Warnings:   result.Warnings,
		Time:       workflow.Now(ctx),
	})
}

// useLessons notes recalled lessons' ids in the status, and the failed
// checks so far, and returns their text for the prompts.
func (t *task) useLessons(out activities.RecallOutput) string {
	for _, id := range out.IDs {
		if !slices.Contains(t.Status.Lessons, id) {
			// Lessons carried from a run before RecalledAt was kept are
			// charged with all the task's failures.
			for len(t.Memory.RecalledAt) < len(t.Status.Lessons) {
				t.Memory.RecalledAt = append(t.Memory.RecalledAt, 0)
			}
			t.Status.Lessons = append(t.Status.Lessons, id)
			t.Memory.RecalledAt = append(t.Memory.RecalledAt, t.Memory.FailedChecks)
		}
	}
	return out.Text
}

// failedAfter is, for each recalled lesson, the checks that failed after
// its recall.
func (t *task) failedAfter() []int {
	out := make([]int, len(t.Status.Lessons))
	for i := range out {
		at := 0
		if i < len(t.Memory.RecalledAt) {
			at = t.Memory.RecalledAt[i]
		}
		out[i] = t.Memory.FailedChecks - at
	}
	return out
}

// saveLessons records what the task taught, and whether the lessons it
// recalled helped. Memory is an aid: if the store cannot take them, the
// task ends as it would have.
func (t *task) saveLessons(ctx workflow.Context, succeeded bool) {
	in := activities.SaveLessonsInput{
		Task: t.in.Task, Language: t.in.Language, Plan: t.Status.Plan, Fixes: t.Memory.Fixes,
		FirstTry: succeeded && !t.Memory.Failed, Recalled: t.Status.Lessons, FailedAfter: t.failedAfter(),
		Succeeded: succeeded, Findings: t.Memory.Findings,
	}
	if p := t.Memory.Pending; p != nil && !succeeded {
		in.Unfixed = []string{p.FailureOutput}
	}
	if err := workflow.ExecuteActivity(storeCtx(ctx, "save lessons"), a.SaveLessons, in).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("saving lessons failed", "error", err)
	}
}

func (t *task) exhausted() error {
	msg := fmt.Sprintf("no passing attempt after %d iterations (step %d of %d)", t.Status.Iteration, t.Status.Step, len(t.Status.Plan))
	if out := t.lastOutput(); out != "" {
		msg += fmt.Sprintf("; last result: %s\n%s", t.Status.LastTest.Headline(), out)
	}
	return temporal.NewNonRetryableApplicationError(ClipError(msg), ErrTypeIterationsExhausted, nil)
}

// MaxErrorBytes bounds the message a task fails with, in its status and
// its result: one screen, with the head and tail of a long check output,
// not the hundreds of KB a failing sandbox can print.
const MaxErrorBytes = 4 << 10

// ClipError bounds a failure message to MaxErrorBytes, keeping its head and
// tail.
func ClipError(msg string) string { return tools.Elide(msg, MaxErrorBytes) }

func (t *task) lastOutput() string {
	if t.Status.LastTest == nil {
		return ""
	}
	return t.Status.LastTest.Output
}

// finish records how the task ended, for the status query.
func (t *task) finish(ctx workflow.Context, err error) {
	var canceled *temporal.CanceledError
	var app *temporal.ApplicationError
	switch {
	case errors.As(err, &canceled) || errors.Is(ctx.Err(), workflow.ErrCanceled):
		t.Status.Error = "cancelled"
		t.setPhase(ctx, PhaseCancelled)
	case errors.As(err, &app) && app.Type() == ErrTypeCancelled:
		t.Status.Error = app.Message()
		t.setPhase(ctx, PhaseCancelled)
	default:
		t.Status.Error = rootMessage(err)
		t.setPhase(ctx, PhaseFailed)
	}
}

// setPhase records the phase and keeps the Web UI's current details and
// the search attributes in step with it.
func (t *task) setPhase(ctx workflow.Context, p Phase) {
	t.Status.Phase = p
	t.showDetails(ctx)
	t.upsertSearchAttributes(ctx)
	t.upsertUsage(ctx)
}

// versionUsageMemo guards keeping the usage in the memo: runs recorded
// before it upserted no memo, and replay through DefaultVersion.
// Retirement: once no run started before the change is open or retained
// by the namespace, the DefaultVersion branch goes, and the GetVersion
// call stays with 1 as its minimum.
const versionUsageMemo = "usage-memo"

// upsertUsage puts the task's tokens and cost in the memo (MemoUsage)
// when they changed since they were last put there.
func (t *task) upsertUsage(ctx workflow.Context) {
	sum := t.Status.Usage.Sum()
	if sum == t.memoUsage || workflow.GetVersion(ctx, versionUsageMemo, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{MemoUsage: sum.Totals()}); err != nil {
		workflow.GetLogger(ctx).Warn("upsert the usage memo", "error", err)
		return
	}
	t.memoUsage = sum
}

// showDetails is the Web UI's line for the task as it is now.
func (t *task) showDetails(ctx workflow.Context) {
	details := fmt.Sprintf("**%s** — step %d/%d, iteration %d/%d", t.Status.Phase, t.Status.Step, len(t.Status.Plan), t.Status.Iteration, t.in.MaxIterations)
	if t.Status.Turn > 0 {
		details += fmt.Sprintf(", turn %d", t.Status.Turn)
	}
	if t.Status.Doing != "" {
		details += ": " + t.Status.Doing
	}
	if pa := t.Status.Pending; pa != nil {
		details += fmt.Sprintf("\n\n**waiting for approval (%s):** %s\n\nSignal `approve` with `{}` or `reject` with `{\"reason\": \"...\"}`.", pa.Kind, pa.Question)
	}
	if lt := t.Status.LastTest; lt != nil {
		details += "\n\nlast result: " + lt.Headline()
	}
	if t.Status.FellBack != "" {
		details += fmt.Sprintf("\n\nmodel: %s (fell back from %s)", t.Status.Model, t.Status.FellBack)
	}
	if u := t.Status.Usage; u.Calls > 0 {
		details += fmt.Sprintf("\n\nmodel calls: %d; tokens: %s; cost %s", u.Calls, u.Tokens(), u.Cost())
		if len(u.PerModel) > 1 {
			for _, m := range u.PerModel {
				details += fmt.Sprintf("\n- %s: %s, cost %s", m.Model, m.Totals().Tokens(), m.Totals().Cost())
			}
		}
	}
	workflow.SetCurrentDetails(ctx, details)
}

var (
	saPhase     = temporal.NewSearchAttributeKeyKeyword(SearchAttrPhase)
	saLanguage  = temporal.NewSearchAttributeKeyKeyword(SearchAttrLanguage)
	saIteration = temporal.NewSearchAttributeKeyInt64(SearchAttrIteration)
	saCost      = temporal.NewSearchAttributeKeyFloat64(SearchAttrCostUSD)
)

// upsertSearchAttributes keeps the list view filterable. It runs only when
// the starter found the attributes registered: upserting an unknown one
// would fail the workflow task.
func (t *task) upsertSearchAttributes(ctx workflow.Context) {
	if !t.in.SearchAttributes {
		return
	}
	err := workflow.UpsertTypedSearchAttributes(ctx,
		saPhase.ValueSet(string(t.Status.Phase)),
		saLanguage.ValueSet(t.in.Language),
		saIteration.ValueSet(int64(t.Status.Iteration)),
		saCost.ValueSet(t.Status.Usage.CostUSD),
	)
	if err != nil {
		workflow.GetLogger(ctx).Warn("upsert search attributes", "error", err)
	}
}

func (t *task) label(kind string) string {
	return fmt.Sprintf("%s step %d attempt %d", kind, t.Status.Step, t.Status.Iteration)
}

func numbered(steps []string) string {
	var b strings.Builder
	for i, s := range steps {
		b.WriteString(fmt.Sprintf("%d. %s\n", i+1, s))
	}
	return b.String()
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// rootMessage digs out the innermost application error's message, which is
// the one written for people.
func rootMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return ClipError(app.Message())
	}
	return ClipError(err.Error())
}

// RegisterOptions names the workflow for registration.
func RegisterOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: WorkflowName}
}
