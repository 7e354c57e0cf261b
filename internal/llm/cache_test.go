package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// breakpoint is a cache breakpoint as the Anthropic client writes it.
var breakpoint = regexp.MustCompile(`,"cache_control":\{"type":"ephemeral"\}`)

// promptParts is a request body's parts: every field but the messages, and each
// message as sent, cache breakpoints taken out (they move every turn).
func promptParts(t *testing.T, body []byte) (head map[string]string, msgs [][]byte) {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(fields["messages"], &raw); err != nil {
		t.Fatal(err)
	}
	head = map[string]string{}
	for k, v := range fields {
		if k != "messages" {
			head[k] = string(breakpoint.ReplaceAll(v, nil))
		}
	}
	for _, m := range raw {
		msgs = append(msgs, breakpoint.ReplaceAll(m, nil))
	}
	return head, msgs
}

// checkPrefixes checks that each request begins with the one before it,
// byte for byte: the same model, tools, system prompt and options, and its
// messages first.
func checkPrefixes(t *testing.T, bodies [][]byte) {
	t.Helper()
	for n := 1; n < len(bodies); n++ {
		prevHead, prev := promptParts(t, bodies[n-1])
		head, msgs := promptParts(t, bodies[n])
		if fmt.Sprint(head) != fmt.Sprint(prevHead) {
			t.Errorf("request %d: fields other than the messages changed:\n%v\n%v", n, prevHead, head)
		}
		if len(msgs) <= len(prev) {
			t.Fatalf("request %d has %d messages, the one before %d", n, len(msgs), len(prev))
		}
		for i := range prev {
			if !bytes.Equal(msgs[i], prev[i]) {
				t.Errorf("request %d: message %d differs from the request before:\n%s\n%s", n, i, prev[i], msgs[i])
			}
		}
	}
}

// cachingTurns runs a tool loop of turns against m: a long system prompt,
// then each turn two calls whose results go back on the next.
func cachingTurns(t *testing.T, m llm.Model, turns int, stream bool) []llm.TurnResult {
	t.Helper()
	conv := llm.Conversation{Messages: []llm.Message{
		{Role: llm.RoleSystem, Text: strings.Repeat("Fix bugs with the tools. ", 180)}, // 1,125 tokens
		{Role: llm.RoleUser, Text: turnUser},
	}}
	var out []llm.TurnResult
	for range turns {
		res, err := m.Turn(context.Background(), conv, tools, llm.TurnOptions{Stream: stream})
		if err != nil {
			t.Fatalf("turn %d: %v", len(out), err)
		}
		out = append(out, res)
		conv.Append(res.Message())
		for _, c := range res.ToolCalls {
			conv.Append(llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: c.ID, Name: c.Name,
				Content: strings.Repeat("line of "+c.ID+"\n", 100)}})
		}
	}
	return out
}

// callingTurns answers every request with two calls of ids new to it.
func callingTurns(n int) llmtest.Reply {
	return llmtest.Reply{Content: "Reading.", ToolCalls: []llmtest.ToolCall{
		{ID: fmt.Sprintf("call_%d_a", n), Name: "read_file", Arguments: `{"path":"a.go"}`},
		{ID: fmt.Sprintf("call_%d_b", n), Name: "search", Arguments: `{"pattern":"Add"}`},
	}}
}

// Anthropic: every turn marks breakpoints so that it reads back all the
// turn before it sent and writes only what it adds; the usage's cache
// counts reach Usage; each request begins with the one before it.
func TestAnthropicTurnsReadTheTurnBefore(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			n := 0
			srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { n++; return callingTurns(n) })
			m := mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5"}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL()})
			results := cachingTurns(t, m, 6, stream)
			reqs := srv.Requests()
			var bodies [][]byte
			for i, r := range reqs {
				bodies = append(bodies, r.Body)
				u := results[i].Usage
				if u.CacheReadTokens != r.CacheReadTokens || u.CacheWriteTokens != r.CacheWriteTokens {
					t.Errorf("turn %d: usage %+v, the server counted %d read, %d written", i, u, r.CacheReadTokens, r.CacheWriteTokens)
				}
				if i == 0 {
					if u.CacheReadTokens != 0 || u.CacheWriteTokens != u.InputTokens {
						t.Errorf("first turn: usage %+v, want the whole prompt written", u)
					}
					continue
				}
				// The whole request before is read back; what this turn
				// adds is written; nothing is fresh.
				if prev := results[i-1].Usage; u.CacheReadTokens != prev.InputTokens || u.FreshTokens() != 0 {
					t.Errorf("turn %d: usage %+v, want %d read (the previous prompt) and nothing fresh", i, u, prev.InputTokens)
				}
				if r.Breakpoints != 3 {
					t.Errorf("turn %d: %d breakpoints, want 3", i, r.Breakpoints)
				}
			}
			checkPrefixes(t, bodies)
		})
	}
}

// Without breakpoints (Env.NoPromptCache), every turn pays for its whole
// prompt.
func TestAnthropicWithoutPromptCache(t *testing.T) {
	n := 0
	srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { n++; return callingTurns(n) })
	m := mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL(), NoPromptCache: true})
	for i, res := range cachingTurns(t, m, 3, false) {
		if u := res.Usage; u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 || u.FreshTokens() != u.InputTokens {
			t.Errorf("turn %d: usage %+v, want all fresh", i, u)
		}
	}
}

// OpenAI caches on its own what it saw before; the client reads
// cached_tokens, and keeps each request's beginning byte for byte the
// request before it.
func TestOpenAITurnsReadCachedTokens(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			n := 0
			srv := llmtest.New(t, func(llmtest.ChatRequest) llmtest.Reply { n++; return callingTurns(n) })
			m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: srv.URL()})
			results := cachingTurns(t, m, 6, stream)
			var bodies [][]byte
			for i, r := range srv.Requests() {
				bodies = append(bodies, r.Body)
				u := results[i].Usage
				if u.CacheReadTokens != r.CachedTokens || (i > 0 && u.CacheReadTokens < 1024) {
					t.Errorf("turn %d: usage %+v, the server reported %d cached", i, u, r.CachedTokens)
				}
				if i > 0 && u.CacheReadTokens < results[i-1].Usage.InputTokens-128 {
					t.Errorf("turn %d: %d cached, want the previous prompt's %d within a block of 128", i, u.CacheReadTokens, results[i-1].Usage.InputTokens)
				}
			}
			checkPrefixes(t, bodies)
		})
	}
}

// OpenAI's usage names the prompt tokens read from its cache and those
// written to it: both reach Usage, whole answers and streamed alike.
func TestOpenAITurnsReadCacheWrites(t *testing.T) {
	const usage = `"usage":{"prompt_tokens":1000,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":600,"cache_write_tokens":300}}`
	whole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+usage+`}`)
	}))
	defer whole.Close()
	streamed := sse(t, oaChunk(`{"role":"assistant","content":"ok"}`)+
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"+
		`data: {"choices":[],`+usage+`}`+"\n\n"+"data: [DONE]\n\n")
	want := llm.Usage{InputTokens: 1000, OutputTokens: 7, CacheReadTokens: 600, CacheWriteTokens: 300}
	for _, tt := range []struct {
		url    string
		stream bool
	}{{whole.URL, false}, {streamed, true}} {
		m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: tt.url})
		res, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: tt.stream})
		if err != nil || res.Usage != want {
			t.Errorf("stream=%v: usage %+v, %v; want %+v", tt.stream, res.Usage, err, want)
		}
	}
}

// Anthropic's message_delta may repeat the usage as totals for the whole
// message: each count it sends replaces message_start's.
func TestAnthropicStreamTakesUsageTotalsFromMessageDelta(t *testing.T) {
	url := sse(t, anEvent("message_start", `,"message":{"usage":{"input_tokens":5,"cache_read_input_tokens":0,"output_tokens":1}}`)+
		anEvent("content_block_start", `,"index":0,"content_block":{"type":"text","text":""}`)+
		anEvent("content_block_delta", `,"index":0,"delta":{"type":"text_delta","text":"ok"}`)+
		anEvent("content_block_stop", `,"index":0`)+
		anEvent("message_delta", `,"delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":4,"cache_read_input_tokens":90,"output_tokens":9}`)+
		anEvent("message_stop", ""))
	m := mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: url})
	res, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: true})
	if want := (llm.Usage{InputTokens: 94, OutputTokens: 9, CacheReadTokens: 90}); err != nil || res.Usage != want {
		t.Errorf("usage %+v, %v; want %+v", res.Usage, err, want)
	}
}
