package llmtest_test

import (
	"context"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// The real Ollama client completes over the scripted server's own chat API
// and takes tool turns over its OpenAI-compatible one.
func TestOllamaServesBothAPIs(t *testing.T) {
	call := llmtest.ToolCall{ID: "call_1", Name: "read", Arguments: `{"path":"a.py"}`}
	srv := llmtest.NewOllama(t, func(req llmtest.ChatRequest) llmtest.Reply {
		if len(req.Tools) > 0 {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{call}}
		}
		return llmtest.Reply{Content: "1. Read a.py and fix it."}
	})
	m, err := llm.New(llm.Spec{Provider: llm.ProviderOllama, Model: "qwen2.5-coder:7b"}, llm.Env{OllamaHost: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, stream := range []bool{false, true} {
		resp, err := m.Complete(ctx, llm.Request{System: "be brief", Prompt: "plan", Stream: stream})
		if err != nil || resp.Text != "1. Read a.py and fix it." || resp.PromptTokens == 0 || resp.CompletionTokens == 0 {
			t.Errorf("complete (stream %v) = %+v, %v", stream, resp, err)
		}
	}
	conv := llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Text: "fix a.py"}}}
	tools := []llm.Tool{{Name: "read", Description: "read a file", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	res, err := m.Turn(ctx, conv, tools, llm.TurnOptions{Stream: true})
	if err != nil || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "read" || res.ToolCalls[0].Arguments != call.Arguments {
		t.Errorf("turn = %+v, %v", res, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[0].Messages[1].Content != "plan" || len(reqs[2].Tools) != 1 || !reqs[2].Stream {
		t.Errorf("requests = %+v", reqs)
	}
}
