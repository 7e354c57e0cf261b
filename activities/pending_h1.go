package activities

// TEMPORARY: declarations of activities implemented elsewhere, so that the
// workflow compiles against them. Delete this file when the real ones land.

import (
	"context"
	"errors"
)

var errPending = errors.New("not implemented in this build")

// ApplyAnswerInput applies the fenced file blocks of the model's text
// answer at Position (an assistant message) to Snapshot.
type ApplyAnswerInput struct {
	Transcript string `json:"transcript"`
	Position   int    `json:"position"` // index of the assistant message
	Snapshot   string `json:"snapshot"`
}

// ApplyAnswerOutput is the workspace after the answer's files; Rejected
// says why they could not be applied.
type ApplyAnswerOutput struct {
	Snapshot string   `json:"snapshot"`
	Changed  []string `json:"changed,omitempty"`
	Rejected string   `json:"rejected,omitempty"`
}

func (a *Activities) OpenStep(context.Context, OpenStepInput) (OpenStepOutput, error) {
	return OpenStepOutput{}, errPending
}

func (a *Activities) Summarize(context.Context, SummarizeInput) (SummarizeOutput, error) {
	return SummarizeOutput{}, errPending
}

func (a *Activities) SandboxCall(context.Context, SandboxCallInput) (SandboxCallOutput, error) {
	return SandboxCallOutput{}, errPending
}

func (a *Activities) ApplyAnswer(context.Context, ApplyAnswerInput) (ApplyAnswerOutput, error) {
	return ApplyAnswerOutput{}, errPending
}
