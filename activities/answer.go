package activities

import (
	"context"
	"errors"
	"fmt"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/modelout"
	"github.com/autocoder/autocoder/internal/workspace"
)

// ToolSetNone offers a turn no tools: a model without tool calling
// answers with fenced blocks, which ApplyAnswer applies.
const ToolSetNone = "none"

// ApplyAnswerInput applies the files of a fenced answer: the conversation
// of a model without tool calling.
type ApplyAnswerInput struct {
	Transcript string `json:"transcript"`
	Position   int    `json:"position"` // the index of the assistant message
	Snapshot   string `json:"snapshot"` // the workspace it changes
}

// ApplyAnswerOutput is the workspace after the answer. When the answer
// could not be used, Rejected says why and Snapshot is the one given.
type ApplyAnswerOutput struct {
	Snapshot string   `json:"snapshot"`
	Changed  []string `json:"changed,omitempty"`
	Rejected string   `json:"rejected,omitempty"`
}

// ApplyAnswer applies the files, edits and deletions of an assistant
// message's fenced blocks to the snapshot, as Generate applies its answer,
// and stores the result. An answer without blocks changes nothing.
func (a *Activities) ApplyAnswer(ctx context.Context, in ApplyAnswerInput) (ApplyAnswerOutput, error) {
	msgs, err := a.conversation(ctx, in.Transcript)
	if err != nil {
		return ApplyAnswerOutput{}, err
	}
	if in.Position < 0 || in.Position >= len(msgs) || msgs[in.Position].Role != llm.RoleAssistant {
		return ApplyAnswerOutput{}, badInput("transcript %s has no assistant message at %d", in.Transcript, in.Position)
	}
	files, err := a.cachedFiles(ctx, in.Snapshot)
	if err != nil {
		return ApplyAnswerOutput{}, err
	}
	out := ApplyAnswerOutput{Snapshot: in.Snapshot}
	parsed, err := modelout.Parse(msgs[in.Position].Text)
	if errors.Is(err, modelout.ErrNoCode) {
		return out, nil
	}
	out.Snapshot, out.Changed, out.Rejected, err = a.applyParsed(ctx, in.Snapshot, files, parsed, err)
	return out, err
}

// applyParsed applies a parsed answer (or the error parsing it) to files
// and stores the result. What makes the answer unusable (a parse error, an
// edit that does not match, a workspace over its limits) is returned as
// rejected with the base snapshot, for the model to be told; err is kept
// for faults of the store.
func (a *Activities) applyParsed(ctx context.Context, base string, files []workspace.File, parsed modelout.Output, parseErr error) (id string, changed []string, rejected string, err error) {
	if parseErr != nil {
		return base, nil, parseErr.Error(), nil
	}
	updated, changed, err := modelout.Apply(files, parsed)
	if err != nil {
		return base, nil, err.Error(), nil
	}
	id, err = a.putChanged(ctx, base, files, updated)
	if err != nil {
		if isLimitError(err) {
			return base, nil, err.Error(), nil
		}
		return "", nil, "", fmt.Errorf("store snapshot: %w", err)
	}
	return id, changed, "", nil
}
