package activities

import (
	"context"
	"fmt"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/modelout"
	"github.com/autocoder/autocoder/internal/repomap"
	"github.com/autocoder/autocoder/internal/truncate"
	"github.com/autocoder/autocoder/internal/workspace"
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
	instr := projectInstructions(files, 0, in.Task)
	m, err := repomap.Build(ctx, files, repomap.Options{Query: repomap.Query{Task: in.Task}, Extractors: languages.Extractors()})
	if err != nil {
		return PlanOutput{}, fmt.Errorf("plan: %w", err)
	}
	resp, usage, err := a.complete(ctx, in.Model, systemPrompt, planPrompt(in, files, instr, m), 0)
	if err != nil {
		return PlanOutput{}, err
	}
	steps, err := modelout.ParsePlan(resp.Text)
	if err != nil {
		activity.GetLogger(ctx).Warn("plan unreadable, using a single step", "error", err)
		steps = fallbackPlan
	}
	a.noteVersions(ctx, in.Language, resp.Text)
	return PlanOutput{Steps: steps, Usage: usage, Lessons: lessons, Instructions: instr.Paths()}, nil
}

// Generate asks the model for the code of one step, applies its files and
// edits to the base snapshot and stores the result as a new snapshot. Given
// the previous attempt's failure, it reflects on it first and generates
// with the diagnosis.
func (a *Activities) Generate(ctx context.Context, in GenerateInput) (GenerateOutput, error) {
	files, err := a.cachedFiles(ctx, in.BaseSnapshot)
	if err != nil {
		return GenerateOutput{}, err
	}
	var out GenerateOutput
	if in.Failure != nil {
		refl, err := a.reflect(ctx, ReflectInput{
			Task: in.Task, Language: in.Language, Plan: in.Plan, Step: in.Step, Iteration: in.Iteration,
			SnapshotID: in.BaseSnapshot, Failure: *in.Failure, Model: in.Model, RecallLessons: in.RecallLessons,
		}, files)
		if err != nil {
			return GenerateOutput{}, err
		}
		out.Reflection, out.Lessons, out.Usage = refl.Reflection, refl.Lessons, refl.Usage
		in.Feedback = refl.Reflection
		if refl.Lessons != nil {
			in.Lessons += refl.Lessons.Text
		}
	}
	resp, usage, err := a.complete(ctx, in.Model, systemPrompt, generatePrompt(in, files, a.stepVersions(ctx)), in.Iteration)
	if err != nil {
		return GenerateOutput{}, err
	}
	out.Usage.Add(usage)
	parsed, err := modelout.Parse(resp.Text)
	out.SnapshotID, out.Changed, out.Rejected, err = a.applyParsed(ctx, in.BaseSnapshot, files, parsed, err)
	if err != nil {
		return GenerateOutput{}, err
	}
	return out, nil
}

// reflect asks for the diagnosis of a failure in the given files and, when
// asked, recalls the lessons of failures like it while the model thinks.
func (a *Activities) reflect(ctx context.Context, in ReflectInput, files []workspace.File) (ReflectOutput, error) {
	var lessons chan *RecallOutput
	if in.RecallLessons {
		lessons = make(chan *RecallOutput, 1)
		go func() {
			lessons <- a.recallOrNothing(ctx, RecallInput{Task: in.Task, Language: in.Language, FailureOutput: in.Failure.Output})
		}()
	}
	resp, usage, err := a.complete(ctx, in.Model, systemPrompt, reflectPrompt(in, files), in.Iteration)
	if err != nil {
		return ReflectOutput{}, err
	}
	out := ReflectOutput{Reflection: clip(strings.TrimSpace(resp.Text), 4000), Usage: usage}
	if lessons != nil {
		out.Lessons = <-lessons
	}
	return out, nil
}

// recallOrNothing recalls lessons for an activity. Memory is an aid: if
// the store cannot answer, the activity goes on without lessons rather
// than fail a paid model call or a finished check.
func (a *Activities) recallOrNothing(ctx context.Context, in RecallInput) *RecallOutput {
	lessons, err := a.recall(ctx, in)
	if err != nil {
		activity.GetLogger(ctx).Warn("recall failed; going on without lessons", "error", err)
	}
	return &lessons
}

// clip keeps at most n bytes of s, cut at a rune boundary, and marks a cut.
func clip(s string, n int) string {
	if head := truncate.Head(s, n); len(head) < len(s) {
		return head + "\n…"
	}
	return s
}
