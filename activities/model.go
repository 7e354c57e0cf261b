package activities

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/modelout"
)

// fallbackPlan is used when the model's plan cannot be read: one step that
// asks for the whole task keeps the task moving instead of failing it.
var fallbackPlan = []string{"Implement the whole task, with tests."}

// Plan asks the model for numbered steps.
func (a *Activities) Plan(ctx context.Context, in PlanInput) (PlanOutput, error) {
	files, err := a.loadFiles(ctx, in.InputSnapshot)
	if err != nil {
		return PlanOutput{}, err
	}
	var lessons *RecallOutput
	if in.RecallLessons {
		lessons = a.recallOrNothing(ctx, RecallInput{Task: in.Task, Language: in.Language})
		in.Lessons = lessons.Text
	}
	resp, usage, err := a.complete(ctx, in.Model, systemPrompt, planPrompt(in, files), 0)
	if err != nil {
		return PlanOutput{}, err
	}
	steps, err := modelout.ParsePlan(resp.Text)
	if err != nil {
		activity.GetLogger(ctx).Warn("plan unreadable, using a single step", "error", err)
		steps = fallbackPlan
	}
	return PlanOutput{Steps: steps, Usage: usage, Lessons: lessons}, nil
}

// Generate asks the model for the code of one step, applies its files and
// edits to the base snapshot and stores the result as a new snapshot.
func (a *Activities) Generate(ctx context.Context, in GenerateInput) (GenerateOutput, error) {
	files, err := a.loadFiles(ctx, in.BaseSnapshot)
	if err != nil {
		return GenerateOutput{}, err
	}
	resp, usage, err := a.complete(ctx, in.Model, systemPrompt, generatePrompt(in, files), in.Iteration)
	if err != nil {
		return GenerateOutput{}, err
	}
	rejected := func(err error) (GenerateOutput, error) {
		return GenerateOutput{SnapshotID: in.BaseSnapshot, Rejected: err.Error(), Usage: usage}, nil
	}
	out, err := modelout.Parse(resp.Text)
	if err != nil {
		return rejected(err)
	}
	updated, changed, err := modelout.Apply(files, out)
	if err != nil {
		return rejected(err)
	}
	id, err := a.Store.PutSnapshot(ctx, updated)
	if err != nil {
		if isLimitError(err) {
			return rejected(err)
		}
		return GenerateOutput{}, fmt.Errorf("store snapshot: %w", err)
	}
	return GenerateOutput{SnapshotID: id, Changed: changed, Usage: usage}, nil
}

// Reflect asks the model for the root cause of a failure and a fix plan.
func (a *Activities) Reflect(ctx context.Context, in ReflectInput) (ReflectOutput, error) {
	files, err := a.loadFiles(ctx, in.SnapshotID)
	if err != nil {
		return ReflectOutput{}, err
	}
	resp, usage, err := a.complete(ctx, in.Model, systemPrompt, reflectPrompt(in, files), in.Iteration)
	if err != nil {
		return ReflectOutput{}, err
	}
	out := ReflectOutput{Reflection: clip(strings.TrimSpace(resp.Text), 4000), Usage: usage}
	if in.RecallLessons {
		out.Lessons = a.recallOrNothing(ctx, RecallInput{Task: in.Task, Language: in.Language, FailureOutput: in.Failure.Output})
	}
	return out, nil
}

// recallOrNothing recalls lessons for a model activity. Memory is an aid:
// if the store cannot answer, the activity goes on without lessons rather
// than fail a paid model call.
func (a *Activities) recallOrNothing(ctx context.Context, in RecallInput) *RecallOutput {
	lessons, err := a.Recall(ctx, in)
	if err != nil {
		activity.GetLogger(ctx).Warn("recall failed; going on without lessons", "error", err)
	}
	return &lessons
}

// clip keeps at most n bytes of s, cut at a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "\n…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }
