package activities

import (
	"context"
	"fmt"
	"github.com/autocoder/autocoder/internal/lang/languages"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/instructions"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/repomap"
	"github.com/autocoder/autocoder/internal/workspace"
)

// OpenStep appends the opening of a plan step's conversation at its start:
// the system prompt and the first user message (see openStepPrompt). A
// retry appends nothing twice: a transcript an earlier try opened is kept
// as it is, even if this worker would build a different map (another
// ctags, say).
func (a *Activities) OpenStep(ctx context.Context, in OpenStepInput) (OpenStepOutput, error) {
	files, err := a.cachedFiles(ctx, in.Snapshot)
	if err != nil {
		return OpenStepOutput{}, err
	}
	step := stepText(in.Plan, in.Step)
	instr := projectInstructions(files, in.InstructionsTokens, in.Task, step, in.Failure)
	m, err := repomap.Build(ctx, files, repomap.Options{
		Extractors:  languages.Extractors(),
		Query:       repomap.Query{Task: in.Task + "\n" + step, Failure: in.Failure},
		TokenBudget: in.MapTokens,
	})
	if err != nil {
		return OpenStepOutput{}, fmt.Errorf("open step %d: %w", in.Step, err)
	}
	out := OpenStepOutput{Length: 2, Instructions: instr.Paths(), Whole: m.Whole}
	msgs, err := a.conversation(ctx, in.Transcript)
	if err != nil {
		return OpenStepOutput{}, err
	}
	if len(msgs) >= 2 && msgs[0].Role == llm.RoleSystem && msgs[1].Role == llm.RoleUser {
		activity.GetLogger(ctx).Info("step already opened by an earlier try", "transcript", in.Transcript)
		return out, nil
	}
	system, addGuide := agentSystemPrompt, ""
	if l, err := language(in.Language); err == nil {
		addGuide = a.adds(l).Guide
	}
	if in.Fenced {
		system, addGuide = systemPrompt, ""
	}
	if err := a.appendMessages(ctx, in.Transcript, 0,
		llm.Message{Role: llm.RoleSystem, Text: system},
		llm.Message{Role: llm.RoleUser, Text: openStepPrompt(in, instr, m, a.stepVersions(ctx), addGuide)},
	); err != nil {
		return OpenStepOutput{}, err
	}
	return out, nil
}

// projectInstructions finds the project's instructions for the work the
// texts describe: the root's, and those of the directories they name,
// within budget tokens (zero: instructions.DefaultBudget).
func projectInstructions(files []workspace.File, budget int, texts ...string) instructions.Set {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	var dirs []string
	for _, t := range texts {
		dirs = append(dirs, repomap.Mentioned(paths, t)...)
	}
	return instructions.Find(files, dirs, budget*4)
}
