package activities

import (
	"slices"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
)

// recorded keeps what the activities count.
type recorded struct {
	tools  []string
	models []string
	tokens int
}

func (r *recorded) ModelCall(model string, in, out int, _ float64) {
	r.models = append(r.models, model)
	r.tokens += in + out
}
func (r *recorded) ToolCall(tool string)   { r.tools = append(r.tools, tool) }
func (r *recorded) Iteration(string, bool) {}

// A tool the model makes up is counted as unknown: the model cannot add
// label values to the metrics.
func TestCountTurnLabelsOnlyOfferedTools(t *testing.T) {
	rec := &recorded{}
	a := &Activities{Metrics: rec}
	res := llm.TurnResult{
		ToolCalls: []llm.ToolCall{{Name: "write"}, {Name: "rm -rf /"}, {Name: "finish"}},
		Usage:     llm.Usage{InputTokens: 120, OutputTokens: 30},
	}
	a.countTurn(llm.Spec{Provider: "openai", Model: "gpt-4.1-mini"}, res, []llm.Tool{{Name: "write"}, {Name: "finish"}})
	if want := []string{"write", "unknown", "finish"}; !slices.Equal(rec.tools, want) {
		t.Errorf("tool calls counted %v, want %v", rec.tools, want)
	}
	if want := []string{"openai:gpt-4.1-mini"}; !slices.Equal(rec.models, want) || rec.tokens != 150 {
		t.Errorf("model calls counted %v with %d tokens, want %v with 150", rec.models, rec.tokens, want)
	}
	(&Activities{}).countTurn(llm.Spec{}, res, nil) // no metrics: nothing to count with, no panic
}
