package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

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
				activities.ErrTypeNoToolCalling, activities.ErrTypeTranscriptConflict,
			},
		},
	})
}

// Store calls (lessons, transcripts) are short. A store that stays down
// fails the task only where the task cannot go on without it: lessons are
// an aid, a conversation is not.
func storeCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         shortRetry(),
	})
}

// shortRetry retries a call of a second or so for about half a minute.
func shortRetry() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumInterval:        10 * time.Second,
		MaximumAttempts:        5,
		NonRetryableErrorTypes: []string{activities.ErrTypeBadInput, activities.ErrTypeTranscriptConflict},
	}
}

// Workspace tool calls run as local activities: they are pure functions
// of a snapshot and their arguments, take milliseconds, and a local
// activity costs about half a millisecond over the bare call where a
// regular one costs several (README, How it works).
func toolsCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         shortRetry(),
	})
}

// Sandbox runs are bounded by the sandbox's own wall clock; the activity
// timeout only has to outlast it. They heartbeat every second and wait for
// a sandbox slot on the sandbox task queue.
func sandboxCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           SandboxTaskQueue(workflow.GetInfo(ctx).TaskQueueName),
		Summary:             summary,
		StartToCloseTimeout: 10 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        5,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadInput, activities.ErrTypeTranscriptConflict},
		},
	})
}

// MCP calls run on the worker that holds the sessions to the user's
// servers; they heartbeat every second while the server works. A call is
// memoized before its result is used, so a retry never repeats one that
// ran.
func mcpCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:             summary,
		StartToCloseTimeout: 5 * time.Minute,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy:         shortRetry(),
	})
}

// Webhook deliveries are bounded on every side: a try by the webhook
// client's timeout (notify.DefaultTimeout, within StartToClose), all tries
// by ScheduleToClose, after which a dead webhook is given up. A refusal
// (a 4xx) is not retried.
func webhookCtx(ctx workflow.Context, summary string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		Summary:                summary,
		StartToCloseTimeout:    30 * time.Second,
		ScheduleToCloseTimeout: 10 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        2 * time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			NonRetryableErrorTypes: []string{activities.ErrTypeWebhookRefused, activities.ErrTypeBadInput},
		},
	})
}
