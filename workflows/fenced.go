package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// fencedAttempt is an attempt for a model without tool calling: one answer
// with the step's files in fenced blocks, over a window of the project
// (reflecting first on the last failure) → check → checkpoint.
func (t *task) fencedAttempt(ctx workflow.Context) error {
	gen, err := t.generate(ctx)
	if err != nil {
		return err
	}
	if err := t.spend(ctx, gen.Usage); err != nil {
		return err
	}
	if stop, err := t.interrupted(ctx, gen.SnapshotID); stop {
		return err
	}
	result, err := t.check(ctx, gen.SnapshotID, gen.Rejected, nil)
	if err != nil {
		return err
	}
	return t.judged(ctx, gen.SnapshotID, result, "")
}

// generate asks for the attempt's code. After a failed attempt it first
// reflects on the failure, in the same activity, and brings the failure's
// lessons along.
func (t *task) generate(ctx workflow.Context) (activities.GenerateOutput, error) {
	in := activities.GenerateInput{
		Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
		Plan: t.Status.Plan, Step: t.Status.Step, Iteration: t.Status.Iteration,
		BaseSnapshot: t.Base, Feedback: t.Reflection, Guidance: t.Status.Feedback, Model: t.models(),
		Lessons: t.Memory.TaskLessons + t.Memory.FailureLessons,
	}
	phase, summary := PhaseGenerating, "generate"
	if t.ReflectOn != nil {
		in.Failure, in.RecallLessons = t.ReflectOn, true
		in.Feedback, in.Lessons = "", t.Memory.TaskLessons
		phase, summary = PhaseReflecting, "reflect and generate"
	}
	t.setPhase(ctx, phase)
	var gen activities.GenerateOutput
	if err := workflow.ExecuteActivity(modelCtx(ctx, t.label(summary)), a.Generate, in).Get(ctx, &gen); err != nil {
		return gen, fmt.Errorf("generate: %w", err)
	}
	if in.Failure != nil {
		t.ReflectOn = nil
		t.Reflection = gen.Reflection
		if p := t.Memory.Pending; p != nil {
			p.Reflection = gen.Reflection
		}
		t.Memory.FailureLessons = ""
		if gen.Lessons != nil {
			t.Memory.FailureLessons = t.useLessons(*gen.Lessons)
		}
	}
	return gen, nil
}
