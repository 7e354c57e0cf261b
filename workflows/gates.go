package workflows

import (
	"fmt"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// ask waits durably for a person's decision, bounded by a timer. A timeout
// is a rejection. Cancel and rollback requests end the wait too.
func (t *task) ask(ctx workflow.Context, kind, question, details string) (decision, error) {
	now := workflow.Now(ctx)
	t.decision = nil
	t.Status.Pending = &Approval{Kind: kind, Question: question, Details: details, Since: now, Deadline: now.Add(t.in.ApprovalTimeout),
		Answers: GateAnswers(kind)}
	prev := t.Status.Phase
	t.setPhase(ctx, PhaseWaiting)
	workflow.GetLogger(ctx).Info("waiting for approval", "kind", kind)
	t.notifyGate(ctx)
	answered, err := workflow.AwaitWithTimeout(ctx, t.in.ApprovalTimeout, func() bool {
		return t.decision != nil || t.Cancel != nil || t.rollback != nil
	})
	t.Status.Pending = nil
	if err != nil {
		return decision{}, err
	}
	if t.Cancel != nil {
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

// spend adds a model call's usage and, past the budget, asks a person for
// more: approval extends the budget by its original size.
func (t *task) spend(ctx workflow.Context, u activities.Usage) error {
	t.Status.Usage.Add(u)
	used := t.Status.Usage.PromptTokens + t.Status.Usage.CompletionTokens
	if !(t.Budget.Tokens > 0 && used > t.Budget.Tokens) && !(t.Budget.USD > 0 && t.Status.Usage.CostUSD > t.Budget.USD) {
		return nil
	}
	d, err := t.ask(ctx, GateBudget, "The task is over its budget. Allow it to spend as much again?",
		fmt.Sprintf("used %d tokens, $%.4f; budget %d tokens, $%.4f", used, t.Status.Usage.CostUSD, t.Budget.Tokens, t.Budget.USD))
	if err != nil {
		return err
	}
	if !d.approved {
		return temporal.NewNonRetryableApplicationError("budget exceeded: "+orText(d.text, "not approved"), ErrTypeBudgetExceeded, nil)
	}
	t.Budget.Tokens += t.in.BudgetTokens
	t.Budget.USD += t.in.BudgetUSD
	return nil
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
		t.Status.Iteration, t.extraIterations()), t.lastOutput())
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
	t.Status.MaxIterations = t.in.MaxIterations
	return nil
}

func (t *task) extraIterations() int { return max(2, t.in.MaxIterations/2) }

// applyRollback moves the task back to a checkpoint: its files, its step
// and, with feedback, the same step again.
func (t *task) applyRollback() {
	r := *t.rollback
	t.rollback = nil
	cp := t.Status.Checkpoints[r.Checkpoint-1]
	t.Base = cp.SnapshotID
	t.Status.Step = cp.Step
	t.Reflection = ""
	t.ReflectOn = nil
	t.Conversation = Conversation{} // the step opens again, in a new conversation
	t.Status.Turn, t.Status.Doing = 0, ""
	if cp.Passed && r.Feedback == "" {
		t.Status.Step++
	}
	if r.Feedback != "" {
		t.Status.Feedback = append(t.Status.Feedback, r.Feedback)
	}
}

func (t *task) registerHandlers(ctx workflow.Context) error {
	if err := workflow.SetQueryHandler(ctx, QueryStatus, func() (Status, error) {
		st := t.Status
		if !t.Fenced { // one-answer attempts have no turns
			st.MaxTurns = t.maxTurns()
		}
		return st, nil
	}); err != nil {
		return fmt.Errorf("register status query: %w", err)
	}
	err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateRollback,
		func(ctx workflow.Context, r RollbackRequest) (Status, error) {
			t.rollback = &r
			if err := workflow.Await(ctx, func() bool { return t.rollback == nil || t.Status.Phase.Done() }); err != nil {
				return Status{}, err
			}
			return t.Status, nil
		},
		workflow.UpdateHandlerOptions{Validator: func(r RollbackRequest) error {
			if r.Checkpoint < 1 || r.Checkpoint > len(t.Status.Checkpoints) {
				return fmt.Errorf("unknown checkpoint %d: the task has checkpoints 1 to %d", r.Checkpoint, len(t.Status.Checkpoints))
			}
			if t.Status.Phase.Done() {
				return fmt.Errorf("the task has already %s", t.Status.Phase)
			}
			return nil
		}})
	if err != nil {
		return fmt.Errorf("register rollback update: %w", err)
	}
	workflow.Go(ctx, t.receiveSignals)
	return nil
}

// signalHandler applies a signal channel's next signal to the state, if
// one is there, and reports whether it was.
type signalHandler struct {
	name  string
	apply func(ctx workflow.Context, c workflow.ReceiveChannel) bool
}

// receiveSignals records what people say; the main loop acts on it. It
// waits for signals without a blocked receive, so a signal stays in its
// channel until read: the main loop can drain the channels itself before
// it continues as new, when this loop may not have run since the signal
// came (a selector would hold it out of reach).
func (t *task) receiveSignals(ctx workflow.Context) {
	for {
		err := workflow.Await(ctx, func() bool {
			for _, h := range t.signalHandlers() {
				if workflow.GetSignalChannel(ctx, h.name).Len() > 0 {
					return true
				}
			}
			return false
		})
		if err != nil {
			return // the workflow is cancelled
		}
		t.drainSignals(ctx)
	}
}

// drainSignals applies every signal received but not yet read.
func (t *task) drainSignals(ctx workflow.Context) {
	for _, h := range t.signalHandlers() {
		for h.apply(ctx, workflow.GetSignalChannel(ctx, h.name)) {
		}
	}
}

func (t *task) signalHandlers() []signalHandler {
	return []signalHandler{
		{SignalApprove, func(ctx workflow.Context, c workflow.ReceiveChannel) bool {
			return receive(c, func(s ApproveSignal) { t.decide(ctx, decision{approved: true, text: s.Comment}) })
		}},
		{SignalReject, func(ctx workflow.Context, c workflow.ReceiveChannel) bool {
			return receive(c, func(s RejectSignal) { t.decide(ctx, decision{text: s.Reason}) })
		}},
		{SignalFeedback, func(ctx workflow.Context, c workflow.ReceiveChannel) bool {
			return receive(c, func(s FeedbackSignal) {
				text := strings.TrimSpace(s.Text)
				if text == "" {
					return
				}
				t.Status.Feedback = append(t.Status.Feedback, text)
				// Guidance answers a waiting question that takes it (see
				// GateAnswers): go on with it.
				if t.Status.Pending != nil && t.Status.Pending.takesGuidance() {
					t.decide(ctx, decision{approved: true, text: text})
				}
			})
		}},
		{SignalCancel, func(ctx workflow.Context, c workflow.ReceiveChannel) bool {
			return receive(c, func(s CancelSignal) {
				t.Cancel = &s
				workflow.GetLogger(ctx).Info("cancel requested", "reason", s.Reason)
			})
		}},
	}
}

// receive applies the next signal of type T in c, if there is one. A
// signal that cannot be decoded is dropped by the SDK, which logs it.
func receive[T any](c workflow.ReceiveChannel, apply func(T)) bool {
	var s T
	if !c.ReceiveAsync(&s) {
		return false
	}
	apply(s)
	return true
}

func (t *task) decide(ctx workflow.Context, d decision) {
	if t.Status.Pending == nil {
		workflow.GetLogger(ctx).Warn("decision ignored: nothing is waiting for approval")
		return
	}
	t.decision = &d
}

func (t *task) stopIfCancelled() error {
	if t.Cancel == nil {
		return nil
	}
	return t.cancelled()
}

func (t *task) cancelled() error {
	msg := "cancelled"
	if t.Cancel.Reason != "" {
		msg += ": " + t.Cancel.Reason
	}
	if n := len(t.Status.Checkpoints); n > 0 {
		msg += fmt.Sprintf(" (last checkpoint #%d)", n)
	}
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeCancelled, nil)
}
