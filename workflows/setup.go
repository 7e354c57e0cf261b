package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// versionSetup guards running the project's setup before the plan. Only a
// task whose input names a setup (TaskInput.Setup) asks for it, so the
// histories of tasks without one are as they were; a task started with a
// setup on a worker from before the change replays through DefaultVersion
// and runs none. Retirement: once no run started before the change is
// open or retained by the namespace, the DefaultVersion branch goes, and
// the GetVersion call stays with 1 as its minimum.
const versionSetup = "project-setup"

// setup runs the project's setup once, before anything else: its changes
// to the workspace are where the task starts. A setup that fails ends the
// task before any model is called.
func (t *task) setup(ctx workflow.Context) error {
	if t.in.Setup == "" || t.Status.Setup != nil {
		return nil
	}
	if workflow.GetVersion(ctx, versionSetup, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	t.setPhase(ctx, PhaseSetup)
	var out activities.SetupOutput
	err := workflow.ExecuteActivity(setupCtx(ctx), a.Setup, activities.SetupInput{
		InputSnapshot: t.in.InputSnapshot, Command: t.in.Setup, Language: t.in.Language,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	t.Status.Setup = &SetupStatus{Command: t.in.Setup, Snapshot: out.Snapshot, Changed: len(out.Changed), Cached: out.Cached, Note: out.Note}
	t.Base = out.Snapshot
	return nil
}

// start is the workspace the task starts from: the input, with the
// setup's changes once it ran.
func (t *task) start() string {
	if s := t.Status.Setup; s != nil {
		return s.Snapshot
	}
	return t.in.InputSnapshot
}

// setupCtx runs the setup on the sandbox task queue. The run is bounded
// by its own limit (activities.DefaultSetupTimeout, or the worker's), and
// installing the project's dependencies may come first: the activity's
// timeout only has to outlast both, while the heartbeat notices a dead
// worker. A setup that ran and failed is not tried again.
func setupCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           SandboxTaskQueue(workflow.GetInfo(ctx).TaskQueueName),
		Summary:             "setup",
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    heartbeatTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        30 * time.Second,
			MaximumAttempts:        3,
			NonRetryableErrorTypes: []string{activities.ErrTypeBadInput, activities.ErrTypeSetupFailed},
		},
	})
}
