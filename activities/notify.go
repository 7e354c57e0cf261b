package activities

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/notify"
	"github.com/autocoder/autocoder/internal/store"
)

// ErrTypeWebhookRefused is a webhook's answer that a retry would get
// again (a 4xx other than 429): the notification is given up.
const ErrTypeWebhookRefused = "WebhookRefused"

// defaultWebhooks delivers notifications when Activities.Webhooks is nil.
var defaultWebhooks = notify.NewClient(notify.DefaultTimeout)

// NotifyTargetsInput asks which of a task's webhooks want an event.
type NotifyTargetsInput struct {
	Ref   string       `json:"ref"` // TaskInput.Notify
	Event notify.Event `json:"event"`
}

// NotifyInput is one message for one of a task's webhooks, named by its
// place in the task's record, or for one of the workers' own, named by
// WorkerTarget (workerTargetID): the workflow never holds the URL.
type NotifyInput struct {
	Ref          string         `json:"ref"`
	Target       int            `json:"target"`
	WorkerTarget string         `json:"workerTarget,omitempty"`
	Message      notify.Message `json:"message"`
}

// WorkerNotify are the webhooks of a worker's own configuration, told of
// every task it runs besides the task's own: a cluster's operator sets
// them once for all its clients.
type WorkerNotify struct {
	Targets []notify.Target
	// Link is a task's Web UI page; nil or "" for none.
	Link func(taskID string) string
}

// WorkerWebhooks returns a new key that names a task's notifications when
// the worker has webhooks of its own, else "": a task asks once, and tells
// them from then on.
func (a *Activities) WorkerWebhooks(ctx context.Context) (string, error) {
	if len(a.WorkerNotify.Targets) == 0 {
		return "", nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "worker-notify-" + hex.EncodeToString(b[:]), nil
}

// WorkerNotifyTargets returns the names of the worker's webhooks that want
// the event (workerTargetID), but for those the task names itself for it
// (Ref), which are told once, as the task's. A task record that cannot be
// read leaves the worker's webhooks told.
func (a *Activities) WorkerNotifyTargets(ctx context.Context, in NotifyTargetsInput) ([]string, error) {
	var own []notify.Target
	if in.Ref != "" {
		rec, err := a.notifyRecord(ctx, in.Ref)
		if err != nil {
			activity.GetLogger(ctx).Warn("the task's webhooks unknown: telling the worker's", "error", err)
		}
		own = rec.Targets
	}
	var wanted []string
	for _, t := range a.WorkerNotify.Targets {
		told := slices.ContainsFunc(own, func(o notify.Target) bool { return o.URL == t.URL && o.Wants(in.Event) })
		if t.Wants(in.Event) && !told {
			wanted = append(wanted, workerTargetID(t))
		}
	}
	return wanted, nil
}

// workerTargetID names a worker's webhook by what it is, not by its place,
// so that any worker of the same configuration finds it: a hash of its
// URL and format, which tells nothing of the URL.
func workerTargetID(t notify.Target) string {
	sum := sha256.Sum256([]byte(string(t.Format) + "\x00" + t.URL))
	return hex.EncodeToString(sum[:8])
}

// NotifyTargets returns the places of the task's webhooks that want the
// event, so that each is sent to, and retried, on its own.
func (a *Activities) NotifyTargets(ctx context.Context, in NotifyTargetsInput) ([]int, error) {
	rec, err := a.notifyRecord(ctx, in.Ref)
	if err != nil {
		return nil, err
	}
	var wanted []int
	for i, t := range rec.Targets {
		if t.Wants(in.Event) {
			wanted = append(wanted, i)
		}
	}
	return wanted, nil
}

// Notify posts the message to one webhook, in its format, once: Temporal
// retries a failure, unless the webhook refused it (ErrTypeWebhookRefused)
// or asked to wait (a 429's Retry-After sets the next retry's delay).
// Errors name the webhook by its host, never by its URL.
func (a *Activities) Notify(ctx context.Context, in NotifyInput) error {
	t, link, err := a.notifyTarget(ctx, in)
	if err != nil {
		return err
	}
	body, err := notify.Body(t.Format, in.Message, link)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeBadInput, nil)
	}
	client := a.Webhooks
	if client == nil {
		client = defaultWebhooks
	}
	err = notify.Post(ctx, client, t, body)
	var de *notify.DeliveryError
	switch {
	case err == nil:
		activity.GetLogger(ctx).Info("notification sent", "webhook", t.Redacted(), "event", in.Message.Event)
		return nil
	case errors.As(err, &de) && de.Permanent:
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeWebhookRefused, nil)
	case errors.As(err, &de) && de.RetryAfter > 0:
		return temporal.NewApplicationErrorWithOptions(err.Error(), "WebhookBusy", temporal.ApplicationErrorOptions{NextRetryDelay: de.RetryAfter})
	}
	return temporal.NewApplicationError(err.Error(), "WebhookUnavailable")
}

// notifyTarget is the webhook a message is for, the task's or the
// worker's, with the task's link. A worker's webhook this worker lacks is
// retried: another worker may have it (the workers' configurations
// differ while a change rolls out).
func (a *Activities) notifyTarget(ctx context.Context, in NotifyInput) (notify.Target, string, error) {
	if in.WorkerTarget != "" {
		i := slices.IndexFunc(a.WorkerNotify.Targets, func(t notify.Target) bool { return workerTargetID(t) == in.WorkerTarget })
		if i < 0 {
			return notify.Target{}, "", temporal.NewApplicationError(fmt.Sprintf("this worker has no webhook %s: the workers' [[notifications]] differ", in.WorkerTarget), "WebhookUnknown")
		}
		link := ""
		if a.WorkerNotify.Link != nil {
			link = a.WorkerNotify.Link(in.Message.TaskID)
		}
		return a.WorkerNotify.Targets[i], link, nil
	}
	rec, err := a.notifyRecord(ctx, in.Ref)
	if err != nil {
		return notify.Target{}, "", err
	}
	if in.Target < 0 || in.Target >= len(rec.Targets) {
		return notify.Target{}, "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("no webhook %d: the task has %d", in.Target, len(rec.Targets)), ErrTypeBadInput, nil)
	}
	return rec.Targets[in.Target], rec.Link, nil
}

// notifyRecord reads the task's webhooks; a record that is not there will
// not appear on a retry.
func (a *Activities) notifyRecord(ctx context.Context, ref string) (notify.Record, error) {
	rec, err := notify.Load(ctx, a.Store, ref)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, notify.ErrBadRef) {
		return rec, temporal.NewNonRetryableApplicationError(
			"the task's webhooks are not in the store (a worker on another store than the command that started the task?)", ErrTypeBadInput, err)
	}
	return rec, err
}
