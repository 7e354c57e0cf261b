package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/tools"
)

// RunToolsInput runs workspace tool calls of the model's last turn.
type RunToolsInput struct {
	Transcript string `json:"transcript"`
	// Position is the transcript's length: the assistant message whose
	// calls run is just before it, and the results go there.
	Position int    `json:"position"`
	Snapshot string `json:"snapshot"` // the workspace the calls see
	// CallIDs picks the calls to run, in that order; none means all of
	// them, in the model's order. Calls to tools of other kinds (the sandbox's) are the
	// workflow's to route elsewhere.
	CallIDs []string `json:"callIds,omitempty"`
}

// ResultSummary describes one call's result for the workflow and status.
type ResultSummary struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	IsError bool   `json:"isError,omitempty"`
	Bytes   int    `json:"bytes"`
}

// RunToolsOutput is the workspace after the calls and the transcript's
// new length.
type RunToolsOutput struct {
	Snapshot string          `json:"snapshot"`
	Changed  []string        `json:"changed,omitempty"`
	Results  []ResultSummary `json:"results"`
	Length   int             `json:"length"`
}

// RunTools runs the calls in order over the snapshot, each seeing the
// files as the calls before it left them, stores the new snapshot when
// files changed, and appends one tool message per call. Tools are pure
// functions of files and arguments, so a retry computes the same results
// and appends nothing twice.
func (a *Activities) RunTools(ctx context.Context, in RunToolsInput) (RunToolsOutput, error) {
	msgs, err := a.conversationTo(ctx, in.Transcript, in.Position)
	if err != nil {
		return RunToolsOutput{}, err
	}
	calls, err := pickCalls(in, msgs)
	if err != nil {
		return RunToolsOutput{}, err
	}
	before, err := a.cachedFiles(ctx, in.Snapshot)
	if err != nil {
		return RunToolsOutput{}, err
	}
	files := before
	out := RunToolsOutput{Snapshot: in.Snapshot, Length: in.Position + len(calls)}
	results := make([]llm.Message, len(calls))
	changed := false
	for i, c := range calls {
		res := tools.Result{Text: c.Problem, IsError: true}
		if c.Problem == "" {
			if res, err = tools.Call(files, c.Name, json.RawMessage(c.Arguments), tools.Limits{}); err != nil {
				return RunToolsOutput{}, fmt.Errorf("run tool %s: %w", c.Name, err)
			}
		}
		if res.Files != nil {
			files, changed = res.Files, true
			for _, p := range res.Changed {
				if !slices.Contains(out.Changed, p) {
					out.Changed = append(out.Changed, p)
				}
			}
		}
		results[i] = llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: res.Text, IsError: res.IsError}}
		out.Results = append(out.Results, ResultSummary{ID: c.ID, Name: c.Name, IsError: res.IsError, Bytes: len(res.Text)})
	}
	if changed {
		if out.Snapshot, err = a.putChanged(ctx, in.Snapshot, before, files); err != nil {
			return RunToolsOutput{}, fmt.Errorf("store snapshot: %w", err)
		}
	}
	if err := a.appendMessages(ctx, in.Transcript, in.Position, results...); err != nil {
		return RunToolsOutput{}, err
	}
	return out, nil
}

// pickCalls returns the calls the input names, in the order named, of the
// model's turn before Position: the last assistant message, with only tool
// results after it (those of calls run before these).
func pickCalls(in RunToolsInput, msgs []llm.Message) ([]llm.ToolCall, error) {
	turn := in.Position - 1
	for turn >= 0 && msgs[turn].Role == llm.RoleTool {
		turn--
	}
	if turn < 0 || msgs[turn].Role != llm.RoleAssistant {
		return nil, badInput("transcript %s: no model turn before position %d", in.Transcript, in.Position)
	}
	all := msgs[turn].ToolCalls
	if len(in.CallIDs) == 0 {
		return all, nil
	}
	var picked []llm.ToolCall
	for _, id := range in.CallIDs {
		i := slices.IndexFunc(all, func(c llm.ToolCall) bool { return c.ID == id })
		if i < 0 {
			return nil, badInput("transcript %s: the model's turn at %d has no call %q", in.Transcript, turn, id)
		}
		picked = append(picked, all[i])
	}
	return picked, nil
}
