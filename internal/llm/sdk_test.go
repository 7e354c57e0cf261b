package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	anoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// oaChunk is one event of an OpenAI chat completions stream.
func oaChunk(delta string) string {
	return `data: {"choices":[{"index":0,"delta":` + delta + `}]}` + "\n\n"
}

// anEvent is one event of an Anthropic messages stream.
func anEvent(typ, data string) string {
	return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\"" + data + "}\n\n"
}

// sdkChat is openai-go's chat completions service at url, as its
// documentation builds it, without retries.
func sdkChat(url string) openai.ChatCompletionService {
	return openai.NewChatCompletionService(oaoption.WithBaseURL(url), oaoption.WithAPIKey("k"), oaoption.WithMaxRetries(0))
}

// sdkAnthropic is anthropic-sdk-go's client at url, without retries or
// settings from the environment.
func sdkAnthropic(url string, opts ...anoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]anoption.RequestOption{anoption.WithoutEnvironmentDefaults(),
		anoption.WithBaseURL(url), anoption.WithMaxRetries(0)}, opts...)...)
}

var sdkQuestion = openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("go")}}

func anQuestion(maxTokens int64) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: maxTokens,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("go"))}}
}

// accumulated reads an OpenAI stream through openai-go's Stream and
// ChatCompletionAccumulator, as its documentation shows.
func accumulated(t *testing.T, url string) (openai.ChatCompletionAccumulator, error) {
	t.Helper()
	chat := sdkChat(url)
	stream := chat.NewStreaming(context.Background(), sdkQuestion)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			t.Fatalf("chunk refused: %s", stream.Current().RawJSON())
		}
	}
	return acc, stream.Err()
}

// TestVendorSDKsFallShort records why tool turns take the vendors' SDKs
// (openai-go v3.98.0, anthropic-sdk-go v2.15.0) for their request and
// answer types, HTTP layer and errors, but not their streaming helpers,
// Messages.New or their way of sending the Anthropic key: each subtest is
// one of those SDK behaviours, next to ours. If one fails after an
// upgrade, the SDK has changed: revisit openai_tools.go or anthropic.go.
func TestVendorSDKsFallShort(t *testing.T) {
	ctx := context.Background()
	t.Run("openai Stream takes a stream cut before [DONE] for a whole one", func(t *testing.T) {
		url := sse(t, oaChunk(`{"role":"assistant","content":"Let me"}`))
		acc, err := accumulated(t, url)
		if err != nil || acc.Choices[0].Message.Content != "Let me" {
			t.Errorf("SDK: %q, %v; it was expected to end without an error", acc.Choices[0].Message.Content, err)
		}
		m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: url})
		if _, err := m.Turn(ctx, firstConversation(), tools, llm.TurnOptions{Stream: true}); err == nil || !strings.Contains(err.Error(), "ended before [DONE]") {
			t.Errorf("ours: %v, want the cut stream refused", err)
		}
	})
	t.Run("openai accumulator merges calls streamed without an index", func(t *testing.T) {
		url := sse(t, oaChunk(`{"tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]}`)+
			oaChunk(`{"tool_calls":[{"id":"b","type":"function","function":{"name":"search","arguments":"{}"}}]}`)+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`+"\n\n"+"data: [DONE]\n\n")
		acc, err := accumulated(t, url)
		if calls := acc.Choices[0].Message.ToolCalls; err != nil || len(calls) != 1 {
			t.Errorf("SDK: %d calls (%+v), %v; it was expected to merge both into one", len(calls), calls, err)
		}
		m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: url})
		if res, err := m.Turn(ctx, firstConversation(), tools, llm.TurnOptions{Stream: true}); err != nil || len(res.ToolCalls) != 2 {
			t.Errorf("ours: %+v, %v; want two calls", res.ToolCalls, err)
		}
	})
	t.Run("openai accumulator keeps arguments past the limit", func(t *testing.T) {
		var acc openai.ChatCompletionAccumulator
		add := func(raw string) {
			var chunk openai.ChatCompletionChunk
			if err := chunk.UnmarshalJSON([]byte(raw)); err != nil || !acc.AddChunk(chunk) {
				t.Fatalf("chunk %.80s: %v", raw, err)
			}
		}
		add(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"write","arguments":"{\"content\":\""}}]}}]}`)
		piece := strings.Repeat("x", 16<<10)
		for range llm.MaxToolArgumentBytes/len(piece) + 2 {
			add(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + piece + `"}}]}}]}`)
		}
		if n := len(acc.Choices[0].Message.ToolCalls[0].Function.Arguments); n <= llm.MaxToolArgumentBytes {
			t.Errorf("SDK kept %d bytes of arguments; it was expected to keep them all, past %d", n, llm.MaxToolArgumentBytes)
		}
	})
	t.Run("anthropic accumulator grows text without a cap and drops input that is not JSON", func(t *testing.T) {
		events := []string{
			`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"x","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		}
		piece := strings.Repeat("x", 1<<20)
		for range llm.DefaultLimits.MaxAnswerBytes/int64(len(piece)) + 1 {
			events = append(events, `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+piece+`"}}`)
		}
		events = append(events, `{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"c1","name":"read_file","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}`,
			`{"type":"message_stop"}`)
		var msg anthropic.Message
		for _, raw := range events {
			var ev anthropic.MessageStreamEventUnion
			if err := json.Unmarshal([]byte(raw), &ev); err != nil {
				t.Fatal(err)
			}
			if err := msg.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
		}
		if n := int64(len(msg.Content[0].Text)); n <= llm.DefaultLimits.MaxAnswerBytes {
			t.Errorf("SDK kept %d bytes of text; it was expected to keep them all, past %d", n, llm.DefaultLimits.MaxAnswerBytes)
		}
		if in := string(msg.Content[1].Input); in != "{}" {
			t.Errorf("SDK kept the input %q; it was expected to replace what is not JSON by {}", in)
		}
		url := sse(t, anEvent("message_start", `,"message":{"usage":{"input_tokens":5,"output_tokens":1}}`)+
			anEvent("content_block_start", `,"index":0,"content_block":{"type":"tool_use","id":"c1","name":"read_file","input":{}}`)+
			anEvent("content_block_delta", `,"index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}`)+
			anEvent("content_block_stop", `,"index":0`)+anEvent("message_delta", `,"delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}`)+
			anEvent("message_stop", ""))
		m := mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: url})
		res, err := m.Turn(ctx, firstConversation(), tools, llm.TurnOptions{Stream: true})
		if err != nil || len(res.ToolCalls) != 1 || res.ToolCalls[0].Arguments != `{"path":` {
			t.Errorf("ours: %+v, %v; want the arguments as written", res.ToolCalls, err)
		}
	})
	t.Run("anthropic Messages.New refuses a long answer not streamed, before sending it", func(t *testing.T) {
		srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
		an := sdkAnthropic(strings.TrimSuffix(srv.URL(), "/v1"), anoption.WithHeader("x-api-key", "k"))
		if _, err := an.Messages.New(ctx, anQuestion(64000)); err == nil || !strings.Contains(err.Error(), "streaming is required") || len(srv.Requests()) != 0 {
			t.Errorf("SDK: %v after %d requests; it was expected to refuse without sending", err, len(srv.Requests()))
		}
		m := mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL()})
		if res, err := m.Turn(ctx, firstConversation(), tools, llm.TurnOptions{MaxTokens: 64000}); err != nil || res.Text != "ok" {
			t.Errorf("ours: %+v, %v", res, err)
		}
	})
	t.Run("anthropic Messages.New posts to v1/messages under ANTHROPIC_BASE_URL, which ends in /v1", func(t *testing.T) {
		var mu sync.Mutex
		var paths []string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			llmtest.AnthropicHandler(func(llmtest.MessagesRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} }).ServeHTTP(w, r)
		}))
		defer srv.Close()
		an := sdkAnthropic(srv.URL+"/v1", anoption.WithHeader("x-api-key", "k"))
		_, sdkErr := an.Messages.New(ctx, anQuestion(100))
		m := mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL + "/v1"})
		_, err := m.Turn(ctx, firstConversation(), tools, llm.TurnOptions{})
		if want := []string{"/v1/v1/messages", "/v1/messages"}; fmt.Sprint(paths) != fmt.Sprint(want) || sdkErr == nil || err != nil {
			t.Errorf("paths %v (SDK: %v, ours: %v), want %v: the SDK's failing, ours answered", paths, sdkErr, err, want)
		}
	})
	t.Run("anthropic WithAPIKey sends a bearer token, not x-api-key", func(t *testing.T) {
		srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
		an := sdkAnthropic(strings.TrimSuffix(srv.URL(), "/v1"), anoption.WithAPIKey("k"))
		var apiErr *anthropic.Error
		if _, err := an.Messages.New(ctx, anQuestion(100)); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
			t.Errorf("SDK: %v; it was expected to be refused for want of x-api-key", err)
		}
	})
}
