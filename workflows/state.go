package workflows

import (
	"fmt"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// task is the workflow's whole state. File contents and conversations never
// enter it: the workspace is a snapshot id, a conversation a transcript id,
// both in the store.
type task struct {
	State // what the next run carries on with
	in    TaskInput

	// Set by signal and update handlers, consumed by the main loop. A
	// decision only answers a question that waits, and a rollback update
	// ends only once it is applied, so neither outlives the run.
	decision *decision
	rollback *RollbackRequest
	// notified counts this run's notifications, which name their
	// workflows.
	notified int
	// workerNotify is the workers' key for this run's notifications, ""
	// when they have no webhooks; nil until asked (workerWebhooks).
	workerNotify *string
	// memoUsage is the usage last put in the memo (MemoUsage).
	memoUsage activities.ModelUsage
}

// decision is a person's answer to a pending approval.
type decision struct {
	approved bool
	text     string // reject reason or approval comment
}

func newTask(in TaskInput) (*task, error) {
	bad := func(format string, args ...any) error {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), activities.ErrTypeBadInput, nil)
	}
	if strings.TrimSpace(in.Task) == "" {
		return nil, bad("task text is empty")
	}
	if l, err := languages.Lookup(in.Language); err != nil || l.Name != in.Language {
		return nil, bad("unsupported language %q (want one of %s)", in.Language, languages.List())
	}
	switch in.Policy {
	case "":
		// Inputs recorded before the warn mode, whose default this was,
		// must replay as they ran; new tasks name their mode.
		in.Policy = PolicyDeny
	case PolicyWarn, PolicyDeny, PolicyAsk, PolicyAllow:
	default:
		return nil, bad("unknown policy mode %q (want warn, deny, ask or allow)", in.Policy)
	}
	if in.MaxIterations <= 0 {
		in.MaxIterations = DefaultMaxIterations
	}
	if in.ApprovalTimeout <= 0 {
		in.ApprovalTimeout = DefaultApprovalTimeout
	}
	if c := in.Carried; c != nil {
		t := &task{in: in, State: *c}
		t.in.Carried = nil
		t.Status.Runs++
		return t, nil
	}
	return &task{
		in: in,
		State: State{
			Base:   in.InputSnapshot,
			Budget: Budget{Tokens: in.BudgetTokens, USD: in.BudgetUSD},
			Status: Status{
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
		},
	}, nil
}

// historyFull reports that the task should go on in a fresh run: the
// server suggests it, or the history passed the task's own limit.
func (t *task) historyFull(ctx workflow.Context) bool {
	info := workflow.GetInfo(ctx)
	return info.GetContinueAsNewSuggested() || (t.in.HistoryLimit > 0 && info.GetCurrentHistoryLength() >= t.in.HistoryLimit)
}

// continueAsNew hands the state to a new run once no update handler is
// still running. Signals that arrived in this workflow task have not been
// read by the signal loop yet: they are applied to the state first, so the
// next run has them.
func (t *task) continueAsNew(ctx workflow.Context) error {
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	t.drainSignals(ctx)
	next := t.in
	next.Carried = &t.State
	workflow.GetLogger(ctx).Info("continuing as new", "iteration", t.Status.Iteration, "runs", t.Status.Runs)
	return workflow.NewContinueAsNewError(ctx, WorkflowName, next)
}
