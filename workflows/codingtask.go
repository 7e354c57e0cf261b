// Package workflows holds the CodingTask workflow: the deterministic story
// of a task, from plan to passing tests.
package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
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

// task is the workflow's whole state. File contents never enter it: the
// workspace is a snapshot id in the store.
type task struct {
	in     TaskInput
	status Status

	base     string // snapshot the next attempt starts from
	feedback string // reflection on the last failed attempt

	// Set by signal and update handlers, consumed by the main loop.
	decision *decision
	cancel   *CancelSignal
	rollback *RollbackRequest

	budgetTokens int
	budgetUSD    float64
	canContinue  bool
	learn        bool // recall and save lessons
	// reflectRecalls: Reflect returns the failure's lessons itself, one
	// activity fewer per failed attempt.
	reflectRecalls bool
	// fewerRoundTrips: Plan recalls the task's lessons itself, and Check
	// validates and tests in one activity, on the sandbox task queue.
	fewerRoundTrips bool
	// reflectInGenerate: a retry's Generate reflects on the failure first,
	// one activity fewer per retry.
	reflectInGenerate bool
	// guard: checks judge by the user's tests as they were (integrity.go).
	guard bool
	// reflectOn is the failed check the next attempt reflects on first.
	reflectOn *activities.TestSummary
	mem       Memory
}

// decision is a person's answer to a pending approval.
type decision struct {
	approved bool
	text     string // reject reason or approval comment
}

// CodingTask plans the task, then for each plan step generates code,
// validates it, runs the tests and, on failure, reflects and tries again,
// checkpointing every attempt, until the tests pass or the iterations run
// out. People steer it with signals (approve, reject, feedback, cancel) and
// the rollback update.
func CodingTask(ctx workflow.Context, in TaskInput) (TaskResult, error) {
	t, err := newTask(in)
	if err != nil {
		return TaskResult{}, err
	}
	if in.Carried == nil {
		t.status.Started = workflow.Now(ctx)
	}
	// Version 1 added continue-as-new; runs recorded before it never do it.
	t.canContinue = workflow.GetVersion(ctx, "continue-as-new", workflow.DefaultVersion, 1) >= 1
	// Version 1 added lessons: recall before planning and retries, save at the end.
	t.learn = workflow.GetVersion(ctx, "lessons", workflow.DefaultVersion, 1) >= 1
	// Version 1 folded the recall of a failure's lessons into Reflect. A
	// Reflect answer without lessons (from an older worker, or replayed
	// from an older history) still gets a Recall of its own.
	t.reflectRecalls = workflow.GetVersion(ctx, "reflect-recalls", workflow.DefaultVersion, 1) >= 1
	// Version 1 folds the task's recall into Plan, and validation and tests
	// into one Check activity that runs on the sandbox task queue. Version 2
	// folds the reflection on a failure into the next attempt's Generate.
	roundTrips := workflow.GetVersion(ctx, "fewer-round-trips", workflow.DefaultVersion, 2)
	t.fewerRoundTrips, t.reflectInGenerate = roundTrips >= 1, roundTrips >= 2
	t.guard = guardsTests(ctx)
	if err := t.registerHandlers(ctx); err != nil {
		return TaskResult{}, err
	}
	res, err := t.run(ctx)
	if err != nil {
		if workflow.IsContinueAsNewError(err) {
			return TaskResult{}, err
		}
		t.finish(ctx, err)
		return TaskResult{}, err
	}
	return res, nil
}

func newTask(in TaskInput) (*task, error) {
	bad := func(format string, args ...any) error {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), activities.ErrTypeBadInput, nil)
	}
	if strings.TrimSpace(in.Task) == "" {
		return nil, bad("task text is empty")
	}
	if in.Language != "python" && in.Language != "go" {
		return nil, bad("unsupported language %q (want python or go)", in.Language)
	}
	switch in.Policy {
	case "":
		in.Policy = PolicyDeny
	case PolicyDeny, PolicyAsk, PolicyAllow:
	default:
		return nil, bad("unknown policy mode %q (want deny, ask or allow)", in.Policy)
	}
	if in.MaxIterations <= 0 {
		in.MaxIterations = DefaultMaxIterations
	}
	if in.ApprovalTimeout <= 0 {
		in.ApprovalTimeout = DefaultApprovalTimeout
	}
	if c := in.Carried; c != nil {
		t := &task{in: in, status: c.Status, base: c.Base, feedback: c.Feedback, reflectOn: c.ReflectOn,
			budgetTokens: c.BudgetTokens, budgetUSD: c.BudgetUSD, cancel: c.Cancel, mem: c.Memory}
		t.status.Runs = c.Runs + 1
		t.in.Carried = nil
		return t, nil
	}
	return &task{
		in:           in,
		base:         in.InputSnapshot,
		budgetTokens: in.BudgetTokens,
		budgetUSD:    in.BudgetUSD,
		status: Status{
			Task:             in.Task,
			Language:         in.Language,
			Phase:            PhaseStarting,
			InputSnapshot:    in.InputSnapshot,
			MaxIterations:    in.MaxIterations,
			TestsByModel:     in.TestCmd == "",
			Runs:             1,
			TestEditsAllowed: in.AllowTestEdits,
			TestCmd:          in.TestCmd,
			Protect:          in.Protect,
		},
	}, nil
}

func (t *task) run(ctx workflow.Context) (TaskResult, error) {
	if t.status.Plan == nil {
		if !t.fewerRoundTrips {
			t.mem.TaskLessons = t.recall(ctx, "")
		}
		if err := t.plan(ctx); err != nil {
			return TaskResult{}, err
		}
	}
	for t.status.Step <= len(t.status.Plan) {
		if t.rollback != nil {
			t.applyRollback()
			continue
		}
		if err := t.stopIfCancelled(ctx); err != nil {
			return TaskResult{}, err
		}
		if t.historyFull(ctx) {
			return TaskResult{}, t.continueAsNew(ctx)
		}
		if t.status.Iteration >= t.in.MaxIterations {
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
	t.status.Step = len(t.status.Plan) // the loop leaves it one past the last step
	t.setPhase(ctx, PhaseSucceeded)
	return TaskResult{
		SnapshotID:   t.base,
		Iterations:   t.status.Iteration,
		TestsByModel: t.status.TestsByModel,
		Status:       t.status,
	}, nil
}

// plan asks for a plan and, when the task wants it, a person's approval; a
// rejected plan is made again with the reason as guidance.
func (t *task) plan(ctx workflow.Context) error {
	for rejections := 0; ; rejections++ {
		t.setPhase(ctx, PhasePlanning)
		recall := t.learn && t.fewerRoundTrips && rejections == 0
		var plan activities.PlanOutput
		err := workflow.ExecuteActivity(modelCtx(ctx, "plan"), a.Plan, activities.PlanInput{
			Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
			InputSnapshot: t.in.InputSnapshot, Model: t.in.Model, Guidance: t.status.Feedback,
			Lessons: t.mem.TaskLessons, RecallLessons: recall,
		}).Get(ctx, &plan)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		switch {
		case plan.Lessons != nil:
			t.mem.TaskLessons = t.useLessons(*plan.Lessons)
		case recall: // an older worker's Plan: the steps still get the lessons
			t.mem.TaskLessons = t.recall(ctx, "")
		}
		t.status.Plan = plan.Steps
		t.status.Step = 1
		if err := t.spend(ctx, plan.Usage); err != nil {
			return err
		}
		if err := t.stopIfCancelled(ctx); err != nil {
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
			t.status.Feedback = append(t.status.Feedback, "The previous plan was rejected: "+d.text)
		}
	}
}

// attempt runs one iteration: (reflect on the last failure →) generate →
// check → checkpoint. Each attempt builds on the previous one's files, so
// the model repairs its own code rather than starting over.
func (t *task) attempt(ctx workflow.Context) error {
	t.status.Iteration++
	gen, err := t.generate(ctx)
	if err != nil {
		return err
	}
	if err := t.spend(ctx, gen.Usage); err != nil {
		return err
	}
	if t.cancel != nil {
		t.checkpoint(ctx, gen.SnapshotID, activities.TestSummary{Stage: "generate", ExitCode: -1, Output: "cancelled before testing"})
		return t.cancelled()
	}
	if t.rollback != nil && t.reflectInGenerate {
		// A person moved the task back while this attempt was being
		// written: it is abandoned untested and does not count.
		t.status.Iteration--
		return nil
	}

	result, err := t.check(ctx, gen)
	if err != nil {
		return err
	}
	t.checkpoint(ctx, gen.SnapshotID, result)
	if err := t.stopIfCancelled(ctx); err != nil {
		return err
	}
	if gen.SnapshotID != "" {
		t.base = gen.SnapshotID
	}
	t.restoreUsersTests(result)
	if result.Passed {
		if p := t.mem.Pending; p != nil {
			p.PassedSnapshot = gen.SnapshotID
			t.mem.Fixes = append(t.mem.Fixes, *p)
			t.mem.Pending = nil
		}
		t.mem.FailureLessons = ""
		t.status.Step++
		t.feedback = ""
		return nil
	}
	t.mem.Failed = true
	if t.rollback != nil {
		return nil // the failure no longer matters: the loop moves back
	}
	if t.reflectInGenerate {
		t.reflectOn = &result
		t.mem.Pending = &activities.Fix{FailedSnapshot: t.base, FailureOutput: result.Output}
		t.noLessonFrom(result)
		return nil
	}
	err = t.reflect(ctx, result)
	t.noLessonFrom(result)
	return err
}

// generate asks for the attempt's code. After a failed attempt it first
// reflects on the failure, in the same activity, and brings the failure's
// lessons along.
func (t *task) generate(ctx workflow.Context) (activities.GenerateOutput, error) {
	in := activities.GenerateInput{
		Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
		Plan: t.status.Plan, Step: t.status.Step, Iteration: t.status.Iteration,
		BaseSnapshot: t.base, Feedback: t.feedback, Guidance: t.status.Feedback, Model: t.in.Model,
		Lessons: t.mem.TaskLessons + t.mem.FailureLessons,
	}
	phase, summary := PhaseGenerating, "generate"
	if t.reflectOn != nil {
		in.Failure, in.RecallLessons = t.reflectOn, t.learn
		in.Feedback, in.Lessons = "", t.mem.TaskLessons
		phase, summary = PhaseReflecting, "reflect and generate"
	}
	t.setPhase(ctx, phase)
	var gen activities.GenerateOutput
	if err := workflow.ExecuteActivity(modelCtx(ctx, t.label(summary)), a.Generate, in).Get(ctx, &gen); err != nil {
		return gen, fmt.Errorf("generate: %w", err)
	}
	if in.Failure != nil {
		t.reflectOn = nil
		t.feedback = gen.Reflection
		if p := t.mem.Pending; p != nil {
			p.Reflection = gen.Reflection
		}
		t.mem.FailureLessons = ""
		if gen.Lessons != nil {
			t.mem.FailureLessons = t.useLessons(*gen.Lessons)
		}
	}
	return gen, nil
}

// reflect asks for a diagnosis of a failed attempt in an activity of its
// own, as runs before reflectInGenerate do.
func (t *task) reflect(ctx workflow.Context, result activities.TestSummary) error {
	t.setPhase(ctx, PhaseReflecting)
	var refl activities.ReflectOutput
	err := workflow.ExecuteActivity(modelCtx(ctx, t.label("reflect")), a.Reflect, activities.ReflectInput{
		Task: t.in.Task, Language: t.in.Language, Plan: t.status.Plan, Step: t.status.Step,
		Iteration: t.status.Iteration, SnapshotID: t.base, Failure: result, Model: t.in.Model,
		RecallLessons: t.learn && t.reflectRecalls,
	}).Get(ctx, &refl)
	if err != nil {
		return fmt.Errorf("reflect: %w", err)
	}
	t.feedback = refl.Reflection
	if err := t.spend(ctx, refl.Usage); err != nil {
		return err
	}
	t.mem.Pending = &activities.Fix{FailedSnapshot: t.base, FailureOutput: result.Output, Reflection: refl.Reflection}
	if refl.Lessons != nil {
		t.mem.FailureLessons = t.useLessons(*refl.Lessons)
	} else {
		t.mem.FailureLessons = t.recall(ctx, result.Output)
	}
	return t.stopIfCancelled(ctx)
}

// check validates and then tests a generated snapshot, in one activity. In
// ask mode, safety findings wait for a person: approved code runs, rejected
// code fails.
func (t *task) check(ctx workflow.Context, gen activities.GenerateOutput) (activities.TestSummary, error) {
	if gen.Rejected != "" {
		return activities.TestSummary{Stage: "generate", ExitCode: 1, Output: gen.Rejected}, nil
	}
	in := activities.CheckInput{
		SnapshotID: gen.SnapshotID, Language: t.in.Language, TestCmd: t.in.TestCmd,
		Allow: t.in.Allow, IgnorePolicy: t.in.Policy == PolicyAllow,
	}
	t.protectTests(&in)

	var result activities.TestSummary
	if t.fewerRoundTrips {
		t.setPhase(ctx, PhaseChecking)
		if err := workflow.ExecuteActivity(t.sandboxCtx(ctx, t.label("validate and test")), a.Check, in).Get(ctx, &result); err != nil {
			return result, fmt.Errorf("check: %w", err)
		}
		if result.Stage != "validate" {
			return result, nil // validated and tested
		}
	} else {
		t.setPhase(ctx, PhaseValidating)
		if err := workflow.ExecuteActivity(t.sandboxCtx(ctx, t.label("validate")), a.Validate, in).Get(ctx, &result); err != nil {
			return result, fmt.Errorf("validate: %w", err)
		}
	}
	if !result.Passed {
		if !result.PolicyOnly || t.in.Policy != PolicyAsk {
			return result, nil
		}
		d, err := t.ask(ctx, GatePolicy, "The code does things the safety policy denies. Run it anyway?", result.Output)
		if err != nil {
			return result, err
		}
		if !d.approved {
			if d.text != "" {
				result.Output += "\nRejected by a person: " + d.text
			}
			return result, nil
		}
	}
	if t.cancel != nil || t.rollback != nil {
		return activities.TestSummary{Stage: "validate", ExitCode: -1, Output: "not tested: interrupted"}, nil
	}
	t.setPhase(ctx, PhaseExecuting)
	if err := workflow.ExecuteActivity(t.sandboxCtx(ctx, t.label("test")), a.Execute, in).Get(ctx, &result); err != nil {
		return result, fmt.Errorf("execute: %w", err)
	}
	return result, nil
}

// stuck runs when the iterations are spent: with --ask-when-stuck a person
// may grant more (with guidance); otherwise the task fails with the last
// test output.
func (t *task) stuck(ctx workflow.Context) error {
	if accepted, err := t.acceptTampered(ctx); accepted || err != nil {
		return err
	}
	if !t.in.AskWhenStuck {
		t.saveLessons(ctx, false)
		return t.exhausted()
	}
	d, err := t.ask(ctx, GateStuck, fmt.Sprintf("No passing attempt after %d iterations. Allow %d more? (feedback helps)",
		t.status.Iteration, t.extraIterations()), t.lastOutput())
	if err != nil {
		return err
	}
	if t.rollback != nil {
		return nil
	}
	if !d.approved {
		t.saveLessons(ctx, false)
		return t.exhausted()
	}
	t.in.MaxIterations += t.extraIterations()
	t.status.MaxIterations = t.in.MaxIterations
	return nil
}

func (t *task) extraIterations() int { return max(2, t.in.MaxIterations/2) }

// spend adds a model call's usage and, past the budget, asks a person for
// more: approval extends the budget by its original size.
func (t *task) spend(ctx workflow.Context, u activities.Usage) error {
	t.status.Usage.Add(u)
	over := func() bool {
		tokens := t.status.Usage.PromptTokens + t.status.Usage.CompletionTokens
		return (t.budgetTokens > 0 && tokens > t.budgetTokens) || (t.budgetUSD > 0 && t.status.Usage.CostUSD > t.budgetUSD)
	}
	if !over() {
		return nil
	}
	d, err := t.ask(ctx, GateBudget, "The task is over its budget. Allow it to spend as much again?",
		fmt.Sprintf("used %d tokens, $%.4f; budget %d tokens, $%.4f", t.status.Usage.PromptTokens+t.status.Usage.CompletionTokens,
			t.status.Usage.CostUSD, t.budgetTokens, t.budgetUSD))
	if err != nil {
		return err
	}
	if !d.approved {
		return temporal.NewNonRetryableApplicationError("budget exceeded: "+orText(d.text, "not approved"), ErrTypeBudgetExceeded, nil)
	}
	t.budgetTokens += t.in.BudgetTokens
	t.budgetUSD += t.in.BudgetUSD
	return nil
}

// ask waits durably for a person's decision, bounded by a timer. A timeout
// is a rejection. Cancel and rollback requests end the wait too.
func (t *task) ask(ctx workflow.Context, kind, question, details string) (decision, error) {
	now := workflow.Now(ctx)
	t.decision = nil
	t.status.Pending = &Approval{Kind: kind, Question: question, Details: details, Since: now, Deadline: now.Add(t.in.ApprovalTimeout),
		Answers: GateAnswers(kind)}
	prev := t.status.Phase
	t.setPhase(ctx, PhaseWaiting)
	workflow.GetLogger(ctx).Info("waiting for approval", "kind", kind)
	answered, err := workflow.AwaitWithTimeout(ctx, t.in.ApprovalTimeout, func() bool {
		return t.decision != nil || t.cancel != nil || t.rollback != nil
	})
	t.status.Pending = nil
	if err != nil {
		return decision{}, err
	}
	if t.cancel != nil {
		return decision{}, t.cancelled()
	}
	t.setPhase(ctx, prev)
	if !answered {
		return decision{text: fmt.Sprintf("no answer within %s", t.in.ApprovalTimeout)}, nil
	}
	if t.decision == nil { // a rollback ended the wait
		return decision{}, nil
	}
	d := *t.decision
	t.decision = nil
	return d, nil
}

// historyFull reports that the task should go on in a fresh run: the
// server suggests it, or the history passed the task's own limit.
func (t *task) historyFull(ctx workflow.Context) bool {
	if !t.canContinue {
		return false
	}
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || (t.in.HistoryLimit > 0 && info.GetCurrentHistoryLength() >= t.in.HistoryLimit)
}

// continueAsNew hands the state to a new run once no update handler is
// still running; signals already received travel in the state.
func (t *task) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	next := t.in
	next.Carried = &Carried{
		Status: t.status, Base: t.base, Feedback: t.feedback,
		BudgetTokens: t.budgetTokens, BudgetUSD: t.budgetUSD, Cancel: t.cancel, Runs: t.status.Runs,
		Memory: t.mem, ReflectOn: t.reflectOn,
	}
	workflow.GetLogger(ctx).Info("continuing as new", "iteration", t.status.Iteration, "runs", t.status.Runs)
	return workflow.NewContinueAsNewError(ctx, WorkflowName, next)
}

func (t *task) applyRollback() {
	r := *t.rollback
	t.rollback = nil
	cp := t.status.Checkpoints[r.Checkpoint-1]
	t.base = cp.SnapshotID
	t.status.Step = cp.Step
	t.feedback = ""
	t.reflectOn = nil
	if cp.Passed && r.Feedback == "" {
		t.status.Step++
	}
	if r.Feedback != "" {
		t.status.Feedback = append(t.status.Feedback, r.Feedback)
	}
}

func (t *task) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (Status, error) { return t.status, nil }); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateRollback,
		func(ctx workflow.Context, r RollbackRequest) (Status, error) {
			t.rollback = &r
			if err := workflow.Await(ctx, func() bool { return t.rollback == nil || t.status.Phase.Done() }); err != nil {
				return Status{}, err
			}
			return t.status, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(r RollbackRequest) error {
			if r.Checkpoint < 1 || r.Checkpoint > len(t.status.Checkpoints) {
				return fmt.Errorf("unknown checkpoint %d: the task has checkpoints 1 to %d", r.Checkpoint, len(t.status.Checkpoints))
			}
			if t.status.Phase.Done() {
				return fmt.Errorf("the task has already %s", t.status.Phase)
			}
			return nil
		}})
	if err != nil {
		return fmt.Errorf("register rollback update: %w", err)
	}
	workflow.Go(ctx, t.receiveSignals)
	return nil
}

// receiveSignals records what people say; the main loop acts on it.
func (t *task) receiveSignals(ctx workflow.Context) {
	approve := workflow.GetSignalChannel(ctx, SignalApprove)
	reject := workflow.GetSignalChannel(ctx, SignalReject)
	feedback := workflow.GetSignalChannel(ctx, SignalFeedback)
	cancel := workflow.GetSignalChannel(ctx, SignalCancel)
	log := workflow.GetLogger(ctx)
	for {
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(approve, func(c workflow.ReceiveChannel, _ bool) {
			var s ApproveSignal
			c.Receive(ctx, &s)
			t.decide(ctx, decision{approved: true, text: s.Comment})
		})
		sel.AddReceive(reject, func(c workflow.ReceiveChannel, _ bool) {
			var s RejectSignal
			c.Receive(ctx, &s)
			t.decide(ctx, decision{text: s.Reason})
		})
		sel.AddReceive(feedback, func(c workflow.ReceiveChannel, _ bool) {
			var s FeedbackSignal
			c.Receive(ctx, &s)
			if text := strings.TrimSpace(s.Text); text != "" {
				t.status.Feedback = append(t.status.Feedback, text)
				// Guidance answers a waiting question that takes it (see
				// GateAnswers): go on with it.
				if t.status.Pending != nil && t.status.Pending.takesGuidance() {
					t.decide(ctx, decision{approved: true, text: text})
				}
			}
		})
		sel.AddReceive(cancel, func(c workflow.ReceiveChannel, _ bool) {
			var s CancelSignal
			c.Receive(ctx, &s)
			t.cancel = &s
			log.Info("cancel requested", "reason", s.Reason)
		})
		sel.Select(ctx)
		if ctx.Err() != nil {
			return
		}
	}
}

func (t *task) decide(ctx workflow.Context, d decision) {
	if t.status.Pending == nil {
		workflow.GetLogger(ctx).Warn("decision ignored: nothing is waiting for approval")
		return
	}
	t.decision = &d
}

func (t *task) stopIfCancelled(ctx workflow.Context) error {
	if t.cancel == nil {
		return nil
	}
	return t.cancelled()
}

func (t *task) cancelled() error {
	msg := "cancelled"
	if t.cancel.Reason != "" {
		msg += ": " + t.cancel.Reason
	}
	if n := len(t.status.Checkpoints); n > 0 {
		msg += fmt.Sprintf(" (last checkpoint #%d)", n)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeCancelled, nil)
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
		Findings:   result.Findings,
		Time:       workflow.Now(ctx),
	})
}

// recall fetches lessons by task (failure == "") or by failure and notes
// their ids in the status. Memory is an aid: if the store cannot answer,
// the task goes on without it.
func (t *task) recall(ctx workflow.Context, failure string) string {
	if !t.learn {
		return ""
	}
	var out activities.RecallOutput
	kind := "recall lessons for the task"
	if failure != "" {
		kind = t.label("recall lessons for the failure of")
	}
	err := workflow.ExecuteActivity(memoryCtx(ctx, kind), a.Recall, activities.RecallInput{
		Task: t.in.Task, Language: t.in.Language, FailureOutput: failure,
	}).Get(ctx, &out)
	if err != nil {
		workflow.GetLogger(ctx).Warn("recall failed; going on without lessons", "error", err)
		return ""
	}
	return t.useLessons(out)
}

// useLessons notes recalled lessons' ids in the status and returns their
// text for the prompts.
func (t *task) useLessons(out activities.RecallOutput) string {
	for _, id := range out.IDs {
		if !slices.Contains(t.status.Lessons, id) {
			t.status.Lessons = append(t.status.Lessons, id)
		}
	}
	return out.Text
}

// saveLessons records what the task taught, and whether the lessons it
// recalled helped.
func (t *task) saveLessons(ctx workflow.Context, succeeded bool) {
	if !t.learn {
		return
	}
	in := activities.SaveLessonsInput{
		Task: t.in.Task, Language: t.in.Language, Plan: t.status.Plan, Fixes: t.mem.Fixes,
		FirstTry: succeeded && !t.mem.Failed, Recalled: t.status.Lessons, Succeeded: succeeded,
	}
	if p := t.mem.Pending; p != nil && !succeeded {
		in.Unfixed = []string{p.FailureOutput}
	}
	if err := workflow.ExecuteActivity(memoryCtx(ctx, "save lessons"), a.SaveLessons, in).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("saving lessons failed", "error", err)
	}
}

func (t *task) exhausted() error {
	msg := fmt.Sprintf("no passing attempt after %d iterations (step %d of %d)", t.status.Iteration, t.status.Step, len(t.status.Plan))
	if out := t.lastOutput(); out != "" {
		msg += fmt.Sprintf("; last result: %s\n%s", t.status.LastTest.Headline(), out)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeIterationsExhausted, nil)
}

func (t *task) lastOutput() string {
	if t.status.LastTest == nil {
		return ""
	}
	return t.status.LastTest.Output
}

// finish records how the task ended, for the status query.
func (t *task) finish(ctx workflow.Context, err error) {
	var canceled *temporal.CanceledError
	var app *temporal.ApplicationError
	switch {
	case errors.As(err, &canceled) || errors.Is(ctx.Err(), workflow.ErrCanceled):
		t.status.Error = "cancelled"
		t.setPhase(ctx, PhaseCancelled)
	case errors.As(err, &app) && app.Type() == ErrTypeCancelled:
		t.status.Error = app.Message()
		t.setPhase(ctx, PhaseCancelled)
	default:
		t.status.Error = rootMessage(err)
		t.setPhase(ctx, PhaseFailed)
	}
}

func (t *task) setPhase(ctx workflow.Context, p Phase) {
	t.status.Phase = p
	details := fmt.Sprintf("**%s** — step %d/%d, iteration %d/%d", p, t.status.Step, len(t.status.Plan), t.status.Iteration, t.in.MaxIterations)
	if pa := t.status.Pending; pa != nil {
		details += fmt.Sprintf("\n\n**waiting for approval (%s):** %s\n\nSignal `approve` with `{}` or `reject` with `{\"reason\": \"...\"}`.", pa.Kind, pa.Question)
	}
	if lt := t.status.LastTest; lt != nil {
		details += "\n\nlast result: " + lt.Headline()
	}
	workflow.SetCurrentDetails(ctx, details)
	t.upsertSearchAttributes(ctx)
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
		saPhase.ValueSet(string(t.status.Phase)),
		saLanguage.ValueSet(t.in.Language),
		saIteration.ValueSet(int64(t.status.Iteration)),
		saCost.ValueSet(t.status.Usage.CostUSD),
	)
	if err != nil {
		workflow.GetLogger(ctx).Warn("upsert search attributes", "error", err)
	}
}

func (t *task) label(kind string) string {
	return fmt.Sprintf("%s step %d attempt %d", kind, t.status.Step, t.status.Iteration)
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
		return app.Message()
	}
	return err.Error()
}

// RegisterOptions names the workflow for registration.
func RegisterOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: WorkflowName}
}

// heartbeatTimeout bounds how long an activity of a dead worker goes
// unnoticed; the activities heartbeat every second (activities.heartbeatEvery).
const heartbeatTimeout = 5 * time.Second

// Model calls heartbeat every second while they wait or stream, so a dead
// worker is noticed within the 5 s heartbeat timeout and the call retried
// on another (or the restarted) worker; retries are Temporal's alone.
func modelCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
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

// Store calls are short; a store that stays down is not worth failing the
// task over (the caller goes on without memory).
func memoryCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    10 * time.Second,
			MaximumAttempts:    5,
		},
	})
}

// Sandbox runs are bounded by the sandbox's own wall clock; the activity
// timeout only has to outlast it. They heartbeat every second. Since
// check-in-one they wait for a sandbox slot on the sandbox task queue.
func (t *task) sandboxCtx(ctx workflow.Context, summary string) workflow.Context {
	var queue string // the workflow's own
	if t.fewerRoundTrips {
		queue = SandboxTaskQueue(workflow.GetInfo(ctx).TaskQueueName)
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           queue,
		Summary:             summary,
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadInput},
		},
	})
}
