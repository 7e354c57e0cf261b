package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// view is what a request carried, the same for both wire protocols: the
// last assistant message sent back and the tool results after it.
type view struct {
	System    string
	User      string
	Tools     []string
	Assistant string // text of the last assistant message
	Calls     []llmtest.ToolCall
	Results   []result
	// Separate says each tool result came in its own message (OpenAI's
	// rule) rather than as blocks of one user message (Anthropic's).
	Separate bool
}

type result struct{ ID, Content string }

type step func(view) llmtest.Reply

func openAIView(r llmtest.ChatRequest) view {
	v := view{System: r.System(), User: r.LastUser(), Separate: true}
	for _, t := range r.Tools {
		v.Tools = append(v.Tools, t.Name)
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "assistant" {
			v.Assistant, v.Calls = m.Content, m.ToolCalls
			break
		}
	}
	for _, m := range r.ToolResults() {
		v.Results = append(v.Results, result{m.ToolCallID, m.Content})
	}
	return v
}

func anthropicView(r llmtest.MessagesRequest) view {
	v := view{System: r.System, User: r.LastUser()}
	for _, t := range r.Tools {
		v.Tools = append(v.Tools, t.Name)
	}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "assistant" {
			for _, b := range m.Blocks {
				switch b.Type {
				case "text":
					v.Assistant += b.Text
				case "tool_use":
					v.Calls = append(v.Calls, llmtest.ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				}
			}
			break
		}
	}
	for _, b := range r.ToolResults() {
		v.Results = append(v.Results, result{b.ToolUseID, b.Content})
	}
	return v
}

func viewed[R any](steps []step, see func(R) view) []func(R) llmtest.Reply {
	out := make([]func(R) llmtest.Reply, len(steps))
	for i, s := range steps {
		out[i] = func(r R) llmtest.Reply { return s(see(r)) }
	}
	return out
}

// provider starts a scripted server speaking a provider's protocol and a
// model pointed at it.
type provider struct {
	name  string
	start func(t *testing.T, steps ...step) llm.Model
	// inputTokens is the server's count for a system and a user message.
	inputTokens func(system, user string) int
}

func mustNew(t *testing.T, spec llm.Spec, env llm.Env) llm.Model {
	t.Helper()
	m, err := llm.New(spec, env)
	if err != nil {
		t.Fatalf("new model: %v", err)
	}
	return m
}

func openAICount(system, user string) int {
	return 3 + 3 + llmtest.CountTokens(system) + 3 + llmtest.CountTokens(user)
}

var providers = []provider{
	{"openai", func(t *testing.T, steps ...step) llm.Model {
		srv := llmtest.New(t, llmtest.Steps(viewed(steps, openAIView)...))
		return mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}, llm.Env{OpenAIKey: "sk-test", OpenAIBaseURL: srv.URL()})
	}, openAICount},
	{"anthropic", func(t *testing.T, steps ...step) llm.Model {
		srv := llmtest.NewAnthropic(t, llmtest.Steps(viewed(steps, anthropicView)...))
		return mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "sk-ant", AnthropicBaseURL: srv.URL()})
	}, func(system, user string) int { return llmtest.CountTokens(system) + 3 + llmtest.CountTokens(user) }},
	{"ollama", func(t *testing.T, steps ...step) llm.Model {
		// Ollama serves the OpenAI protocol under /v1 of its own address.
		srv := llmtest.New(t, llmtest.Steps(viewed(steps, openAIView)...))
		return mustNew(t, llm.Spec{Provider: llm.ProviderOllama}, llm.Env{OllamaHost: strings.TrimSuffix(srv.URL(), "/v1")})
	}, openAICount},
}

var tools = []llm.Tool{
	{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "search", Description: "Search the workspace.", Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
}

const (
	turnSystem = "You fix bugs with tools."
	turnUser   = "The test TestAdd fails; fix it."
	// thinking holds no brace, so JSON leaking into the text shows.
	thinking = "Let me look at the code and search for callers first."
)

var twoCalls = []llmtest.ToolCall{
	{ID: "call_read", Name: "read_file", Arguments: `{"path":"internal/calc/add.go"}`},
	{ID: "call_search", Name: "search", Arguments: `{"pattern":"func Add\\("}`},
}

func firstConversation() llm.Conversation {
	return llm.Conversation{Messages: []llm.Message{
		{Role: llm.RoleSystem, Text: turnSystem},
		{Role: llm.RoleUser, Text: turnUser},
	}}
}

// expectFirst checks the first request of a scenario and answers with reply.
func expectFirst(reply llmtest.Reply) step {
	return func(v view) llmtest.Reply {
		if v.System != turnSystem || v.User != turnUser {
			return llmtest.Fail("system/user = %q/%q", v.System, v.User)
		}
		if want := []string{"read_file", "search"}; !reflect.DeepEqual(v.Tools, want) {
			return llmtest.Fail("tools offered = %v, want %v", v.Tools, want)
		}
		return reply
	}
}

// expectResults checks that the previous turn came back whole: its text,
// every call with its id, name and arguments, and one result per call
// with the call's id, in order.
func expectResults(text string, calls []llmtest.ToolCall, then llmtest.Reply) step {
	return func(v view) llmtest.Reply {
		if v.Assistant != text {
			return llmtest.Fail("assistant text sent back = %q, want %q", v.Assistant, text)
		}
		if !reflect.DeepEqual(v.Calls, calls) {
			return llmtest.Fail("tool calls sent back = %+v, want %+v", v.Calls, calls)
		}
		var want []result
		for _, c := range calls {
			want = append(want, result{c.ID, "result of " + c.Name})
		}
		if !reflect.DeepEqual(v.Results, want) {
			return llmtest.Fail("tool results = %+v, want %+v", v.Results, want)
		}
		return then
	}
}

// answer runs every call of a turn the way the agent loop will: one tool
// message per call, carrying the call's id and the tool's name.
func answerCalls(conv *llm.Conversation, res llm.TurnResult) {
	conv.Append(res.Message())
	for _, c := range res.ToolCalls {
		conv.Append(llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: "result of " + c.Name}})
	}
}

func wantCalls(calls []llmtest.ToolCall) []llm.ToolCall {
	var out []llm.ToolCall
	for _, c := range calls {
		out = append(out, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return out
}

func outputTokens(r llmtest.Reply) int {
	n := llmtest.CountTokens(r.Content)
	for _, c := range r.ToolCalls {
		n += llmtest.CountTokens(c.Name) + llmtest.CountTokens(c.Arguments)
	}
	return n
}

// TestTurnRoundTrips drives each provider's client through its protocol:
// a text-only turn, one tool call, and text with two tool calls whose
// results go back on the next turn; streamed and not, and for OpenAI with
// the calls' deltas interleaved.
func TestTurnRoundTrips(t *testing.T) {
	const done = "Fixed: Add returned a-b."
	scenarios := []struct {
		name       string
		first      llmtest.Reply
		stop       llm.StopReason
		interleave bool
	}{
		{"text only", llmtest.Reply{Content: done}, llm.StopEnd, false},
		{"one tool call", llmtest.Reply{ToolCalls: twoCalls[:1]}, llm.StopToolUse, false},
		{"text and two tool calls", llmtest.Reply{Content: thinking, ToolCalls: twoCalls}, llm.StopToolUse, false},
		{"text and two interleaved tool calls", llmtest.Reply{Content: thinking, ToolCalls: twoCalls, InterleaveToolCalls: true}, llm.StopToolUse, true},
	}
	for _, p := range providers {
		for _, sc := range scenarios {
			if sc.interleave && p.name == "anthropic" {
				continue // Anthropic streams one block at a time
			}
			for _, streaming := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/streaming=%v", p.name, sc.name, streaming), func(t *testing.T) {
					final := llmtest.Reply{Content: done}
					steps := []step{expectFirst(sc.first)}
					if len(sc.first.ToolCalls) > 0 {
						steps = append(steps, expectResults(sc.first.Content, sc.first.ToolCalls, final))
					}
					m := p.start(t, steps...)
					if !m.ToolCalling() {
						t.Fatalf("%s reports no tool calling", p.name)
					}
					var chunks []string
					opts := llm.TurnOptions{MaxTokens: 1000}
					if streaming {
						opts.OnText = func(c string) { chunks = append(chunks, c) }
					}
					conv := firstConversation()
					res, err := m.Turn(context.Background(), conv, tools, opts)
					if err != nil {
						t.Fatalf("first turn: %v", err)
					}
					want := llm.TurnResult{Text: sc.first.Content, ToolCalls: wantCalls(sc.first.ToolCalls),
						Usage:      llm.Usage{InputTokens: p.inputTokens(turnSystem, turnUser), OutputTokens: outputTokens(sc.first)},
						StopReason: sc.stop}
					res.ProviderStop = ""
					if !reflect.DeepEqual(res, want) {
						t.Errorf("first turn = %+v\nwant %+v", res, want)
					}
					if streaming && strings.Join(chunks, "") != sc.first.Content {
						t.Errorf("streamed text = %q, want exactly the answer's text %q", strings.Join(chunks, ""), sc.first.Content)
					}
					if !streaming && len(chunks) > 0 {
						t.Errorf("non-streaming turn streamed %q", chunks)
					}
					if len(res.ToolCalls) == 0 {
						return
					}
					answerCalls(&conv, res)
					res, err = m.Turn(context.Background(), conv, tools, opts)
					if err != nil {
						t.Fatalf("second turn: %v", err)
					}
					if res.Text != done || len(res.ToolCalls) != 0 || res.StopReason != llm.StopEnd || res.Usage.InputTokens == 0 {
						t.Errorf("second turn = %+v", res)
					}
				})
			}
		}
	}
}
