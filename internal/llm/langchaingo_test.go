package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// langchaingoTurn takes a turn through a langchaingo client the way its
// documentation shows: an assistant message holds its text and calls as
// parts, each tool result is its own tool message.
func langchaingoTurn(t *testing.T, m llms.Model, conv llm.Conversation, stream bool) (llm.TurnResult, string, error) {
	t.Helper()
	var msgs []llms.MessageContent
	for _, msg := range conv.Messages {
		switch msg.Role {
		case llm.RoleSystem:
			msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, msg.Text))
		case llm.RoleUser:
			msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, msg.Text))
		case llm.RoleAssistant:
			mc := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			if msg.Text != "" {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: msg.Text})
			}
			for _, c := range msg.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
			}
			msgs = append(msgs, mc)
		case llm.RoleTool:
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: msg.Result.CallID, Name: msg.Result.Name, Content: msg.Result.Content}}})
		}
	}
	var defs []llms.Tool
	for _, tool := range tools {
		var params map[string]any
		if err := json.Unmarshal(tool.Parameters, &params); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: tool.Name, Description: tool.Description, Parameters: params}})
	}
	opts := []llms.CallOption{llms.WithTools(defs), llms.WithMaxTokens(1000)}
	var streamed strings.Builder
	if stream {
		opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
			streamed.Write(chunk)
			return nil
		}))
	}
	resp, err := m.GenerateContent(context.Background(), msgs, opts...)
	if err != nil {
		return llm.TurnResult{}, streamed.String(), err
	}
	var res llm.TurnResult
	for _, ch := range resp.Choices {
		res.Text += ch.Content
		for _, c := range ch.ToolCalls {
			res.ToolCalls = append(res.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments})
		}
	}
	return res, streamed.String(), nil
}

// TestLangchaingoLosesToolCalls records why tool turns do not go through
// langchaingo v0.1.14: the same scripted servers and scripts that
// TestTurnRoundTrips passes with our clients break its clients. If this
// test fails after an upgrade, the library may have been fixed: revisit
// Turn and the README's "Model providers".
func TestLangchaingoLosesToolCalls(t *testing.T) {
	const done = "Fixed."
	t.Run("anthropic sends back only the first part of a turn", func(t *testing.T) {
		for _, first := range []llmtest.Reply{
			{Content: thinking, ToolCalls: twoCalls}, // text and two calls
			{ToolCalls: twoCalls},                    // two calls
		} {
			srv := llmtest.NewAnthropic(t, llmtest.Steps(viewed([]step{
				expectFirst(first), expectResults(first.Content, first.ToolCalls, llmtest.Reply{Content: done}),
			}, anthropicView)...))
			m, err := anthropic.New(anthropic.WithToken("sk-ant"), anthropic.WithModel("claude-sonnet-4-5"), anthropic.WithBaseURL(srv.URL()))
			if err != nil {
				t.Fatal(err)
			}
			conv := firstConversation()
			res, _, err := langchaingoTurn(t, m, conv, false)
			if err != nil {
				t.Fatalf("first turn: %v", err)
			}
			if len(res.ToolCalls) != 2 {
				t.Fatalf("first turn read %d calls, want 2", len(res.ToolCalls))
			}
			answerCalls(&conv, res)
			_, _, err = langchaingoTurn(t, m, conv, false)
			if err == nil || !strings.Contains(err.Error(), "tool_use_id") {
				t.Errorf("second turn error = %v, want the API refusing results whose tool_use was not sent back", err)
			}
			last := srv.Requests()[1]
			for _, m := range last.Messages {
				if m.Role == "assistant" && len(m.Blocks) != 1 {
					t.Errorf("assistant message sent back with %d blocks; the library was expected to send only its first", len(m.Blocks))
				}
			}
		}
	})
	t.Run("openai streams call JSON as text and joins interleaved deltas", func(t *testing.T) {
		for _, interleave := range []bool{false, true} {
			first := llmtest.Reply{Content: thinking, ToolCalls: twoCalls, InterleaveToolCalls: interleave}
			srv := llmtest.New(t, llmtest.Steps(viewed([]step{expectFirst(first)}, openAIView)...))
			m, err := openai.New(openai.WithToken("sk-test"), openai.WithModel("gpt-4.1"), openai.WithBaseURL(srv.URL()))
			if err != nil {
				t.Fatal(err)
			}
			res, streamed, err := langchaingoTurn(t, m, firstConversation(), true)
			if err != nil {
				t.Fatalf("turn: %v", err)
			}
			if !strings.Contains(streamed, `"arguments"`) {
				t.Errorf("interleave=%v: streamed text %q holds no tool-call JSON", interleave, streamed)
			}
			whole := len(res.ToolCalls) == 2 && res.ToolCalls[0].Arguments == twoCalls[0].Arguments &&
				res.ToolCalls[1].Arguments == twoCalls[1].Arguments
			if whole == interleave {
				t.Errorf("interleave=%v: calls = %+v", interleave, res.ToolCalls)
			}
		}
	})
}
