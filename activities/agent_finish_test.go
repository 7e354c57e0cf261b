package activities

import (
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// TestModelTurnCarriesFinishAndCommands: a turn's summary carries a run
// call's whole command (past the clipped arguments) and the finish call's
// arguments decoded; a finish whose arguments are not its JSON carries
// none.
func TestModelTurnCarriesFinishAndCommands(t *testing.T) {
	long := "pytest -x tests/test_api.py -k '" + strings.Repeat("x", 300) + "'"
	e, model, _ := agentEnv(t, protocols[0],
		func(seen) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{
				{ID: "c1", Name: "run", Arguments: `{"command":"` + long + `"}`},
				{ID: "c2", Name: "finish", Arguments: `{"summary":"fixed total","tests":["tests/test_api.py"]}`},
			}}
		},
		func(seen) llmtest.Reply {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c3", Name: "finish", Arguments: `{"summary": 3}`}}}
		},
	)
	n := start(t, e, "tr")
	out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model})
	if len(out.Calls) != 2 || out.Calls[0].Command != long || len(out.Calls[0].Args) >= len(long) || out.Calls[1].Command != "" {
		t.Fatalf("calls = %+v", out.Calls)
	}
	if out.Finish == nil || out.Finish.Summary != "fixed total" || !slices.Equal(out.Finish.Tests, []string{"tests/test_api.py"}) {
		t.Fatalf("finish = %+v", out.Finish)
	}

	// The calls' results, as the workflow appends them, then a finish
	// with arguments of the wrong shape.
	n = run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: "tr", Position: out.Length,
		Messages: []llm.Message{
			{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "c1", Name: "run", Content: "1 passed"}},
			{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "c2", Name: "finish", Content: "finished"}},
		}})
	out = run[ModelTurnOutput](t, e, e.acts.ModelTurn, ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model})
	if len(out.Calls) != 1 || out.Calls[0].Name != ToolFinish || out.Finish == nil || out.Finish.Summary != "" || len(out.Finish.Tests) != 0 {
		t.Fatalf("bad finish: calls %+v, finish %+v", out.Calls, out.Finish)
	}
}
