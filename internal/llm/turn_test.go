package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

var threeCalls = append(slices.Clone(twoCalls), llmtest.ToolCall{ID: "call_read_test", Name: "read_file", Arguments: `{"path":"internal/calc/add_test.go"}`})

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
		{"text and three tool calls", llmtest.Reply{Content: thinking, ToolCalls: threeCalls}, llm.StopToolUse, false},
		{"text and three interleaved tool calls", llmtest.Reply{Content: thinking, ToolCalls: threeCalls, InterleaveToolCalls: true}, llm.StopToolUse, true},
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
					if !strings.HasPrefix(res.Model, p.name+":") {
						t.Errorf("answered by %q, want a %s model", res.Model, p.name)
					}
					res.ProviderStop, res.Model = "", ""
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

func asError(t *testing.T, err error) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return e
}

// A conversation or tool list no provider would accept is refused before
// anything is sent, saying which message is wrong.
func TestTurnRefusesBadInput(t *testing.T) {
	call := llm.ToolCall{ID: "c1", Name: "read_file", Arguments: `{"path":"a"}`}
	asked := llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}
	user := llm.Message{Role: llm.RoleUser, Text: "go"}
	res := func(id, name string) llm.Message {
		return llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: id, Name: name, Content: "x"}}
	}
	tests := []struct {
		name  string
		msgs  []llm.Message
		tools []llm.Tool
		want  string
	}{
		{"no messages", nil, tools, "no messages"},
		{"call unanswered before user", []llm.Message{user, asked, user}, tools, "message 2: 1 tool call(s)"},
		{"call unanswered at end", []llm.Message{user, asked}, tools, "last assistant message have no result"},
		{"result names another tool", []llm.Message{user, asked, res("c1", "search")}, tools, `names tool "search", the call was to "read_file"`},
		{"result for no call", []llm.Message{user, asked, res("c1", "read_file"), res("c2", "read_file")}, tools, `call "c2"`},
		{"empty assistant", []llm.Message{user, {Role: llm.RoleAssistant}}, tools, "neither text nor tool calls"},
		{"bad tool name", []llm.Message{user}, []llm.Tool{{Name: "read file"}}, `tool name "read file"`},
		{"tool schema not an object", []llm.Message{user}, []llm.Tool{{Name: "x", Parameters: json.RawMessage(`[1]`)}}, "not a JSON object"},
		{"tool offered twice", []llm.Message{user}, []llm.Tool{{Name: "x"}, {Name: "x"}}, "offered twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Text("unused"))
			m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIBaseURL: srv.URL()})
			_, err := m.Turn(context.Background(), llm.Conversation{Messages: tt.msgs}, tt.tools, llm.TurnOptions{})
			e := asError(t, err)
			if e.Kind != llm.KindInvalidRequest || !errors.Is(err, llm.ErrBadConversation) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v (kind %v), want invalid request naming %q", err, e.Kind, tt.want)
			}
			if srv.Calls() != 0 {
				t.Errorf("a bad conversation reached the provider")
			}
		})
	}
}

// Anthropic takes tool input as a JSON object: arguments a model wrote
// that are not one cannot be sent back, and the error says which call.
func TestTurnAnthropicRefusesArgumentsThatAreNotAnObject(t *testing.T) {
	srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return llmtest.Reply{Content: "unused"} })
	m := mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL()})
	conv := llm.Conversation{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: `{"path":`}}},
		{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "c1", Name: "read_file", Content: "bad arguments", IsError: true}},
	}}
	_, err := m.Turn(context.Background(), conv, tools, llm.TurnOptions{})
	if e := asError(t, err); e.Kind != llm.KindInvalidRequest || !strings.Contains(err.Error(), `tool call "c1" arguments`) {
		t.Errorf("error = %v (kind %v)", err, e.Kind)
	}
	if len(srv.Requests()) != 0 {
		t.Errorf("the request was sent")
	}
}

// A model without native tool calling says so, and a turn offering it
// tools fails at once so the caller falls back to fenced blocks.
func TestTurnWithoutToolCalling(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("plain answer"))
	host := strings.TrimSuffix(srv.URL(), "/v1")
	m := mustNew(t, llm.Spec{Provider: llm.ProviderOllama, Model: "codellama:7b"}, llm.Env{OllamaHost: host})
	if m.ToolCalling() {
		t.Fatal("codellama reports tool calling")
	}
	_, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{})
	if e := asError(t, err); !errors.Is(err, llm.ErrNoToolCalling) || e.Retryable() {
		t.Errorf("error = %v, want a permanent ErrNoToolCalling", err)
	}
	res, err := m.Turn(context.Background(), firstConversation(), nil, llm.TurnOptions{})
	if err != nil || res.Text != "plain answer" {
		t.Errorf("turn without tools = %+v, %v", res, err)
	}
	if !mustNew(t, llm.Spec{Provider: llm.ProviderOllama, Model: "qwen2.5-coder:7b"}, llm.Env{OllamaHost: host}).ToolCalling() {
		t.Error("qwen2.5-coder reports no tool calling")
	}
}

func TestTurnClassifiesErrors(t *testing.T) {
	tests := []struct {
		provider   string
		reply      llmtest.Reply
		kind       llm.ErrorKind
		retryAfter time.Duration
		inMessage  string
	}{
		{"openai", llmtest.Reply{Status: 401}, llm.KindAuth, 0, "set OPENAI_API_KEY"},
		{"openai", llmtest.Reply{Status: 429, RetryAfter: "3"}, llm.KindRateLimited, 3 * time.Second, "Rate limit reached"},
		{"openai", llmtest.Reply{Status: 400, Content: "context too long"}, llm.KindInvalidRequest, 0, "(HTTP 400): context too long"},
		{"openai", llmtest.Reply{}, llm.KindTransient, 0, "empty response"},
		{"openai", llmtest.Reply{Status: 500, Content: "boom"}, llm.KindTransient, 0, "(HTTP 500), try again later: boom"},
		{"openai", llmtest.Reply{Status: 404}, llm.KindInvalidRequest, 0, "does not serve model"},
		{"anthropic", llmtest.Reply{Status: 401}, llm.KindAuth, 0, "set ANTHROPIC_API_KEY"},
		{"anthropic", llmtest.Reply{Status: 529}, llm.KindTransient, 0, "HTTP 529"},
		{"anthropic", llmtest.Reply{Status: 429, RetryAfter: "7"}, llm.KindRateLimited, 7 * time.Second, "rate limiting"},
		{"anthropic", llmtest.Reply{}, llm.KindTransient, 0, "empty response"},
		{"anthropic", llmtest.Reply{Status: 400, Content: "prompt is too long: 210000 tokens > 200000 maximum"}, llm.KindInvalidRequest, 0, "(HTTP 400): prompt is too long"},
		{"anthropic", llmtest.Reply{Status: 500}, llm.KindTransient, 0, "(HTTP 500), try again later: Internal Server Error"},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%d/streaming=%v", tt.provider, tt.reply.Status, streaming), func(t *testing.T) {
				var m llm.Model
				if tt.provider == "anthropic" {
					srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return tt.reply })
					m = mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL()})
				} else {
					srv := llmtest.New(t, llmtest.Fixed(tt.reply))
					m = mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: srv.URL()})
				}
				_, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: streaming})
				e := asError(t, err)
				if e.Kind != tt.kind || e.RetryAfter != tt.retryAfter || !strings.Contains(err.Error(), tt.inMessage) {
					t.Errorf("error = %v (kind %v, retry after %v), want kind %v, %v, naming %q", err, e.Kind, e.RetryAfter, tt.kind, tt.retryAfter, tt.inMessage)
				}
			})
		}
	}
}

// sse serves a fixed body of server-sent events at every path.
func sse(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Streams that end early or report a failure midway are transient errors,
// never a partial answer taken for a whole one.
func TestTurnBrokenStreams(t *testing.T) {
	const (
		oaStart = `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Let me"}}]}` + "\n\n"
		anStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me\"}}\n\n"
	)
	tests := []struct {
		name, provider, body, want string
	}{
		{"openai cut", "openai", oaStart, "ended before [DONE]"},
		{"openai error chunk", "openai", oaStart + `data: {"error":{"message":"server overloaded"}}` + "\n\n", "server overloaded"},
		{"openai bad chunk", "openai", oaStart + "data: {not json\n\n", "decode stream chunk"},
		{"openai endless event", "openai", oaStart + "data: " + strings.Repeat("x", 9<<20) + "\n\n", "longer than"},
		{"anthropic cut", "anthropic", anStart, "ended before message_stop"},
		{"anthropic error event", "anthropic", anStart + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", "overloaded_error: Overloaded"},
		{"anthropic delta before start", "anthropic", "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n", "block 1, which has not started"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := sse(t, tt.body)
			var m llm.Model
			if tt.provider == "anthropic" {
				m = mustNew(t, llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: url})
			} else {
				m = mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: url})
			}
			_, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: true})
			e := asError(t, err)
			if e.Kind != llm.KindTransient || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v (kind %v), want transient naming %q", err, e.Kind, tt.want)
			}
		})
	}
}

// Some OpenAI-compatible servers send tool-call deltas without an index,
// one call after another, or calls without ids: each new id starts a
// call, and calls without one get ids of ours so results can be matched.
func TestTurnOpenAICompatibleVariants(t *testing.T) {
	t.Run("stream without index", func(t *testing.T) {
		chunk := func(delta string) string {
			return `data: {"choices":[{"index":0,"delta":` + delta + `}]}` + "\n\n"
		}
		body := chunk(`{"tool_calls":[{"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]}`) +
			chunk(`{"tool_calls":[{"function":{"arguments":"th\":\"x\"}"}}]}`) +
			chunk(`{"tool_calls":[{"id":"b","type":"function","function":{"name":"search","arguments":"{}"}}]}`) +
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":4}}` + "\n\n" +
			"data: [DONE]\n\n"
		m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIBaseURL: sse(t, body)})
		res, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: true})
		want := llm.TurnResult{ToolCalls: []llm.ToolCall{{ID: "a", Name: "read_file", Arguments: `{"path":"x"}`}, {ID: "b", Name: "search", Arguments: "{}"}},
			Usage: llm.Usage{InputTokens: 9, OutputTokens: 4}, StopReason: llm.StopToolUse, ProviderStop: "tool_calls", Model: "openai:gpt-4.1"}
		if err != nil || !reflect.DeepEqual(res, want) {
			t.Errorf("turn = %+v, %v\nwant %+v", res, err, want)
		}
	})
	t.Run("calls without ids", func(t *testing.T) {
		srv := llmtest.New(t, llmtest.Fixed(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{Name: "read_file", Arguments: `{"path":"a"}`}, {Name: "search", Arguments: `{}`}}}))
		m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIBaseURL: srv.URL()})
		for _, stream := range []bool{false, true} {
			res, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: stream})
			if err != nil || len(res.ToolCalls) != 2 || res.ToolCalls[0].ID != "call_0" || res.ToolCalls[1].ID != "call_1" {
				t.Errorf("stream=%v: turn = %+v, %v", stream, res, err)
			}
		}
	})
}

// The conversation and a turn's result are stored as JSON and read back
// whole.
func TestConversationJSON(t *testing.T) {
	conv := firstConversation()
	res := llm.TurnResult{Text: thinking, ToolCalls: wantCalls(twoCalls), Usage: llm.Usage{InputTokens: 10, OutputTokens: 20},
		StopReason: llm.StopToolUse, ProviderStop: "tool_use"}
	answerCalls(&conv, res)
	for _, v := range []any{conv, res} {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(v))
		if err := json.Unmarshal(raw, back.Interface()); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), v) {
			t.Errorf("%T did not survive JSON: %s", v, raw)
		}
	}
	if err := conv.Validate(); err != nil {
		t.Errorf("answered conversation: %v", err)
	}
}

// Arguments a model wrote that are not JSON go back to an OpenAI-compatible
// server as written, next to the error result that told the model so.
func TestTurnOpenAISendsBackArgumentsAsWritten(t *testing.T) {
	const bad = `{"path":`
	srv := llmtest.New(t, func(r llmtest.ChatRequest) llmtest.Reply {
		v := openAIView(r)
		if len(v.Calls) != 1 || v.Calls[0].Arguments != bad || len(v.Results) != 1 || v.Results[0].Content != "arguments are not JSON" {
			return llmtest.Fail("sent back %+v / %+v", v.Calls, v.Results)
		}
		return llmtest.Reply{Content: "sorry"}
	})
	m := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIBaseURL: srv.URL()})
	conv := llm.Conversation{Messages: []llm.Message{
		{Role: llm.RoleUser, Text: "go"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read_file", Arguments: bad}}},
		{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "c1", Name: "read_file", Content: "arguments are not JSON", IsError: true}},
	}}
	if res, err := m.Turn(context.Background(), conv, tools, llm.TurnOptions{Stream: true}); err != nil || res.Text != "sorry" {
		t.Errorf("turn = %+v, %v", res, err)
	}
}

// A turn outliving its context (an activity's deadline) stops at once and
// says it was interrupted, streamed or not.
func TestTurnDeadline(t *testing.T) {
	for _, p := range []llm.Provider{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		slow := llmtest.Reply{Content: "late", Delay: 10 * time.Second}
		var m llm.Model
		if p == llm.ProviderAnthropic {
			srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return slow })
			m = mustNew(t, llm.Spec{Provider: p}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL()})
		} else {
			srv := llmtest.New(t, llmtest.Fixed(slow))
			m = mustNew(t, llm.Spec{Provider: p}, llm.Env{OpenAIBaseURL: srv.URL()})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, err := m.Turn(ctx, firstConversation(), tools, llm.TurnOptions{Stream: true})
		cancel()
		if e := asError(t, err); !e.Retryable() || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("%s: error = %v", p, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: turn took %v after its deadline", p, d)
		}
	}
}

// Each protocol's request goes where the base URL says, with the key
// where the API takes it: OPENAI_BASE_URL and ANTHROPIC_BASE_URL name
// the API's root, with or without /v1, and the endpoint's path follows
// it; OpenAI's key is a bearer token, Anthropic's goes in x-api-key,
// with the API version every other request of ours names.
func TestTurnSendsToTheBaseURLWithItsKey(t *testing.T) {
	type seen struct{ path, auth, apiKey, version string }
	var mu sync.Mutex
	var got []seen
	record := func(next http.Handler) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got = append(got, seen{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), r.Header.Get("Anthropic-Version")})
			mu.Unlock()
			next.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	oa := record(llmtest.Handler(llmtest.Text("ok")))
	an := record(llmtest.AnthropicHandler(func(llmtest.MessagesRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} }))
	tests := []struct {
		spec llm.Spec
		env  llm.Env
		want seen
	}{
		{llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "sk-o", OpenAIBaseURL: oa + "/v1"}, seen{"/v1/chat/completions", "Bearer sk-o", "", ""}},
		{llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIKey: "sk-o", OpenAIBaseURL: oa + "/"}, seen{"/chat/completions", "Bearer sk-o", "", ""}},
		{llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIBaseURL: oa + "/v1"}, seen{"/v1/chat/completions", "Bearer unused", "", ""}},
		{llm.Spec{Provider: llm.ProviderOllama}, llm.Env{OllamaHost: oa}, seen{"/v1/chat/completions", "", "", ""}},
		{llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "sk-a", AnthropicBaseURL: an + "/v1"}, seen{"/v1/messages", "", "sk-a", llm.AnthropicVersion}},
		{llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "sk-a", AnthropicBaseURL: an}, seen{"/messages", "", "sk-a", llm.AnthropicVersion}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			mu.Lock()
			got = nil
			mu.Unlock()
			m := mustNew(t, tt.spec, tt.env)
			res, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: stream})
			mu.Lock()
			if err != nil || res.Text != "ok" || len(got) != 1 || got[0] != tt.want {
				t.Errorf("%s at %+v, stream=%v: %+v, %v; requests %+v, want one %+v", tt.spec, tt.env, stream, res, err, got, tt.want)
			}
			mu.Unlock()
		}
	}
}
