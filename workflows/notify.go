package workflows

import (
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/notify"
)

// NotificationWorkflowName names the workflow that delivers one message
// to a task's webhooks.
const NotificationWorkflowName = "Notification"

// versionNotifications guards telling webhooks at gates and at the end.
// Only a task whose input names webhooks (TaskInput.Notify) asks for it,
// so the histories of tasks without them are as they were; a task started
// with webhooks on a worker from before the change replays through
// DefaultVersion and sends nothing. Retirement: once no run started before
// the change is open or retained by the namespace, the DefaultVersion
// branch goes, and the GetVersion call stays with 1 as its minimum.
const versionNotifications = "webhook-notifications"

// versionWorkerNotifications guards asking whether the workers have
// webhooks of their own (activities.WorkerNotify), at a task's first
// notification. A run from before the change replays through
// DefaultVersion and tells only its own webhooks. Retirement as
// versionNotifications.
const versionWorkerNotifications = "worker-notifications"

// notificationTimeout bounds a Notification workflow, its retries included.
const notificationTimeout = 15 * time.Minute

// NotificationInput is one message for a task's webhooks.
type NotificationInput struct {
	Ref string `json:"ref"` // TaskInput.Notify; "" when it has none
	// Worker tells the workers' own webhooks too.
	Worker  bool           `json:"worker,omitempty"`
	Message notify.Message `json:"message"`
}

// notify tells the task's webhooks about msg without waiting for them: a
// Notification workflow of its own delivers it, with retries, and is left
// to finish when the task ends (it is abandoned, not cancelled), so a dead
// webhook never holds up or fails the task. The task waits only for the
// Notification to start, one round trip: a child still unstarted would be
// lost with a task that ends.
func (t *task) notify(ctx workflow.Context, msg notify.Message) {
	// Disconnected: a task being cancelled still says so.
	ctx, _ = workflow.NewDisconnectedContext(ctx)
	workerKey := t.workerWebhooks(ctx)
	own := t.in.Notify != "" && workflow.GetVersion(ctx, versionNotifications, workflow.DefaultVersion, 1) != workflow.DefaultVersion
	if !own && workerKey == "" {
		return
	}
	in := NotificationInput{Worker: workerKey != "", Message: msg}
	// Named by the task's record, or the workers' key, unique per task,
	// not by the task's id, which a replay from a recorded history does
	// not know.
	name := workerKey
	if own {
		in.Ref, name = t.in.Notify, t.in.Notify
	}
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	in.Message.TaskID, in.Message.Task = id, t.in.Task
	t.notified++
	child := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:               fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(name, "/", "-"), t.Status.Runs, t.notified),
		ParentClosePolicy:        enumspb.PARENT_CLOSE_POLICY_ABANDON,
		WorkflowExecutionTimeout: notificationTimeout,
		StaticSummary:            fmt.Sprintf("notify: %s of %s", msg.Event, id),
	})
	run := workflow.ExecuteChildWorkflow(child, NotificationWorkflowName, in)
	if err := run.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("notification not started", "event", msg.Event, "error", err)
	}
}

// workerWebhooks asks the workers, once per run, whether they have
// webhooks of their own, and returns the key that names the run's
// notifications when they do; "" when they do not, or the question
// failed (the task goes on untold).
func (t *task) workerWebhooks(ctx workflow.Context) string {
	if t.workerNotify == nil {
		key := ""
		if workflow.GetVersion(ctx, versionWorkerNotifications, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
			if err := workflow.ExecuteActivity(storeCtx(ctx, "workers' webhooks"), a.WorkerWebhooks).Get(ctx, &key); err != nil {
				workflow.GetLogger(ctx).Warn("the workers' webhooks unknown", "error", err)
			}
		}
		t.workerNotify = &key
	}
	return *t.workerNotify
}

// notifyGate tells the webhooks that the pending question waits.
func (t *task) notifyGate(ctx workflow.Context) {
	p := t.Status.Pending
	answers := make([]notify.Answer, len(p.Answers))
	for i, a := range p.Answers {
		answers[i] = notify.Answer{Words: a.Words, Signal: a.Signal, Means: a.Means}
	}
	t.notify(ctx, notify.Message{Event: notify.EventGate, Gate: p.Kind, Question: p.Question, Details: p.Details, Answers: answers})
}

// notifyEnd tells the webhooks how the task ended, by its phase.
func (t *task) notifyEnd(ctx workflow.Context) {
	switch t.Status.Phase {
	case PhaseSucceeded:
		result := fmt.Sprintf("%d plan step(s) done in %d iteration(s), %d tokens", len(t.Status.Plan), t.Status.Iteration,
			t.Status.Usage.PromptTokens+t.Status.Usage.CompletionTokens)
		if lt := t.Status.LastTest; lt != nil {
			result += "; last check: " + lt.Headline()
		}
		t.notify(ctx, notify.Message{Event: notify.EventSucceeded, Result: result})
	case PhaseCancelled:
		t.notify(ctx, notify.Message{Event: notify.EventCancelled, Result: t.Status.Error})
	default:
		t.notify(ctx, notify.Message{Event: notify.EventFailed, Result: t.Status.Error})
	}
}

// Notification delivers one message to each of a task's webhooks that
// wants it, and with Worker to each of the workers' own, each on its own
// with retries (webhookCtx). A webhook that
// refuses it or stays down is logged and given up: the notification
// workflow itself always completes.
func Notification(ctx workflow.Context, in NotificationInput) error {
	var sent []workflow.Future
	var names []string
	deliver := func(name string, in activities.NotifyInput) {
		names = append(names, name)
		sent = append(sent, workflow.ExecuteActivity(webhookCtx(ctx, fmt.Sprintf("notify %s: %s", name, in.Message.Event)), a.Notify, in))
	}
	targets := activities.NotifyTargetsInput{Ref: in.Ref, Event: in.Message.Event}
	if in.Ref != "" {
		var places []int
		if err := workflow.ExecuteActivity(storeCtx(ctx, "webhooks for "+string(in.Message.Event)), a.NotifyTargets, targets).Get(ctx, &places); err != nil {
			workflow.GetLogger(ctx).Warn("notification not sent: webhooks unknown", "event", in.Message.Event, "error", err)
		}
		for _, target := range places {
			deliver(fmt.Sprintf("webhook %d", target+1), activities.NotifyInput{Ref: in.Ref, Target: target, Message: in.Message})
		}
	}
	if in.Worker {
		var ids []string
		if err := workflow.ExecuteActivity(storeCtx(ctx, "worker webhooks for "+string(in.Message.Event)), a.WorkerNotifyTargets, targets).Get(ctx, &ids); err != nil {
			workflow.GetLogger(ctx).Warn("notification not sent: the workers' webhooks unknown", "event", in.Message.Event, "error", err)
		}
		for _, id := range ids {
			deliver("worker webhook "+id, activities.NotifyInput{WorkerTarget: id, Message: in.Message})
		}
	}
	for i, f := range sent {
		if err := f.Get(ctx, nil); err != nil {
			workflow.GetLogger(ctx).Warn("notification not delivered", "webhook", names[i], "event", in.Message.Event, "error", err)
		}
	}
	return nil
}

// NotificationRegisterOptions names the Notification workflow for registration.
func NotificationRegisterOptions() workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: NotificationWorkflowName}
}
