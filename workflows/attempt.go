package workflows

import (
	"fmt"

	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
)

// attempt runs one iteration: generate (reflecting first on the last
// failure) → check → checkpoint. Each attempt builds on the previous one's
// files, so the model repairs its own code rather than starting over.
func (t *task) attempt(ctx workflow.Context) error {
	t.Status.Iteration++
	gen, err := t.generate(ctx)
	if err != nil {
		return err
	}
	if err := t.spend(ctx, gen.Usage); err != nil {
		return err
	}
	if t.Cancel != nil {
		t.checkpoint(ctx, gen.SnapshotID, activities.TestSummary{Stage: "generate", ExitCode: -1, Output: "cancelled before testing"})
		return t.cancelled()
	}
	if t.rollback != nil {
		// A person moved the task back while this attempt was being
		// written: it is abandoned untested and does not count.
		t.Status.Iteration--
		return nil
	}
	result, err := t.check(ctx, gen.SnapshotID, gen.Rejected)
	if err != nil {
		return err
	}
	return t.judged(ctx, gen.SnapshotID, result)
}

// judged checkpoints an attempt's check and moves on: to the next step
// after a pass, or to a retry that reflects on the failure.
func (t *task) judged(ctx workflow.Context, snapshot string, result activities.TestSummary) error {
	t.checkpoint(ctx, snapshot, result)
	if err := t.stopIfCancelled(); err != nil {
		return err
	}
	if snapshot != "" {
		t.Base = snapshot
	}
	t.restoreUsersTests(result)
	if result.Passed {
		if p := t.Memory.Pending; p != nil {
			p.PassedSnapshot = snapshot
			t.Memory.Fixes = append(t.Memory.Fixes, *p)
			t.Memory.Pending = nil
		}
		t.Memory.FailureLessons = ""
		t.Status.Step++
		t.Reflection = ""
		return nil
	}
	t.Memory.Failed = true
	if t.rollback != nil {
		return nil // the failure no longer matters: the loop moves back
	}
	t.ReflectOn = &result
	t.Memory.Pending = &activities.Fix{FailedSnapshot: t.Base, FailureOutput: result.Output}
	t.noLessonFrom(result)
	return nil
}

// generate asks for the attempt's code. After a failed attempt it first
// reflects on the failure, in the same activity, and brings the failure's
// lessons along.
func (t *task) generate(ctx workflow.Context) (activities.GenerateOutput, error) {
	in := activities.GenerateInput{
		Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
		Plan: t.Status.Plan, Step: t.Status.Step, Iteration: t.Status.Iteration,
		BaseSnapshot: t.Base, Feedback: t.Reflection, Guidance: t.Status.Feedback, Model: t.in.Model,
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

// check validates and then tests a snapshot, in one activity. In ask mode,
// safety findings wait for a person: approved code runs, rejected code
// fails. A model answer that could not be applied (rejected) fails
// without a check.
func (t *task) check(ctx workflow.Context, snapshot, rejected string) (activities.TestSummary, error) {
	if rejected != "" {
		return activities.TestSummary{Stage: "generate", ExitCode: 1, Output: rejected}, nil
	}
	in := activities.CheckInput{
		SnapshotID: snapshot, Language: t.in.Language, TestCmd: t.in.TestCmd,
		Allow: t.in.Allow, IgnorePolicy: t.in.Policy == PolicyAllow,
	}
	t.protectTests(&in)

	var result activities.TestSummary
	t.setPhase(ctx, PhaseChecking)
	if err := workflow.ExecuteActivity(sandboxCtx(ctx, t.label("validate and test")), a.Check, in).Get(ctx, &result); err != nil {
		return result, fmt.Errorf("check: %w", err)
	}
	if result.Stage != "validate" || result.Passed {
		return result, nil // validated and tested
	}
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
	if t.Cancel != nil || t.rollback != nil {
		return activities.TestSummary{Stage: "validate", ExitCode: -1, Output: "not tested: interrupted"}, nil
	}
	t.setPhase(ctx, PhaseExecuting)
	if err := workflow.ExecuteActivity(sandboxCtx(ctx, t.label("test")), a.Execute, in).Get(ctx, &result); err != nil {
		return result, fmt.Errorf("execute: %w", err)
	}
	return result, nil
}
