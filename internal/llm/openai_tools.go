package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// The OpenAI chat completions protocol with tools, as OpenAI, Ollama (under
// /v1) and other compatible servers speak it.

type oaRequest struct {
	Model               string          `json:"model"`
	Messages            []oaMessage     `json:"messages"`
	Tools               []oaTool        `json:"tools,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *oaStreamOption `json:"stream_options,omitempty"`
}

type oaStreamOption struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaTool struct {
	Type     string     `json:"type"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type oaMessage struct {
	Role string `json:"role"`
	// Content is null for an assistant message holding only tool calls.
	Content    *string      `json:"content"`
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaToolCall struct {
	// Index says which call a streamed delta continues.
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// oaResponse is a whole answer or one streamed chunk of it.
type oaResponse struct {
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage"`
	// Error is how a stream reports a failure after it has begun.
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		// CachedTokens of the prompt were read from the provider's cache.
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u oaUsage) usage() Usage {
	out := Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadTokens = min(d.CachedTokens, u.PromptTokens)
	}
	return out
}

type oaChoice struct {
	Message      oaAnswer `json:"message"`
	Delta        oaAnswer `json:"delta"`
	FinishReason string   `json:"finish_reason"`
}

type oaAnswer struct {
	Content   string       `json:"content"`
	ToolCalls []oaToolCall `json:"tool_calls"`
}

// toolEndpoint is the base URL of the OpenAI-compatible API: Ollama serves
// it under /v1 next to its own API.
func (c *client) toolEndpoint() string {
	if c.spec.Provider == ProviderOllama {
		return strings.TrimSuffix(c.endpoint, "/") + "/v1"
	}
	return strings.TrimSuffix(c.endpoint, "/")
}

func (c *client) openAITurn(ctx context.Context, conv Conversation, tools []Tool, maxTokens int, stream bool, onText func(string)) (TurnResult, error) {
	req := oaRequest{Model: c.spec.Model, Messages: openAIMessages(conv), Stream: stream}
	for _, t := range tools {
		req.Tools = append(req.Tools, oaTool{Type: "function", Function: oaFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	if c.legacyMaxTokens || c.spec.Provider == ProviderOllama {
		req.MaxTokens = maxTokens
	} else {
		req.MaxCompletionTokens = maxTokens
	}
	if stream {
		req.StreamOptions = &oaStreamOption{IncludeUsage: true}
	}
	header := http.Header{}
	if c.key != "" {
		header.Set("Authorization", "Bearer "+c.key)
	}
	return exchangeTurn(ctx, c, c.toolEndpoint()+"/chat/completions", header, req, stream, openAIWhole,
		func(body io.Reader) (TurnResult, error) { return readOpenAIStream(body, onText) })
}

// openAIWhole reads a whole answer's first choice.
func openAIWhole(r oaResponse) TurnResult {
	var ch oaChoice
	if len(r.Choices) > 0 {
		ch = r.Choices[0]
	}
	calls := make([]ToolCall, 0, len(ch.Message.ToolCalls))
	for _, tc := range ch.Message.ToolCalls {
		calls = append(calls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return openAIResult(r, ch.Message.Content, ch.FinishReason, withIDs(calls))
}

func openAIResult(r oaResponse, text, finish string, calls []ToolCall) TurnResult {
	res := TurnResult{Text: text, ToolCalls: calls, StopReason: normalStop(finish), ProviderStop: finish}
	if r.Usage != nil {
		res.Usage = r.Usage.usage()
	}
	return res
}

// readOpenAIStream gathers a streamed answer: text deltas go to onText as
// they come, tool-call deltas are joined by their index, and usage comes
// in the last chunk (stream_options.include_usage).
func readOpenAIStream(body io.Reader, onText func(string)) (TurnResult, error) {
	var (
		text   strings.Builder
		calls  openAICalls
		finish string
		last   oaResponse
		done   bool
	)
	err := readEvents(body, func(data []byte) error {
		if string(data) == "[DONE]" {
			done = true
			return errStopEvents
		}
		var chunk oaResponse
		if err := json.Unmarshal(data, &chunk); err != nil {
			return fmt.Errorf("decode stream chunk: %w", err)
		}
		if chunk.Error != nil {
			return fmt.Errorf("stream failed: %s", chunk.Error.Message)
		}
		if chunk.Usage != nil {
			last.Usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if ch.Delta.Content != "" {
				text.WriteString(ch.Delta.Content)
				onText(ch.Delta.Content)
			}
			calls.add(ch.Delta.ToolCalls)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
		}
		return nil
	})
	if err != nil {
		return TurnResult{}, err
	}
	if !done {
		return TurnResult{}, errors.New("stream ended before [DONE]: the answer is incomplete")
	}
	return openAIResult(last, text.String(), finish, calls.list()), nil
}

// openAICalls joins streamed tool-call deltas. A delta continues the call
// its index names; from servers that send no index (one call at a time) it
// continues the last call unless it brings a new id.
type openAICalls struct {
	byIndex map[int]*ToolCall
	args    map[int]*argBuffer
	last    int
	next    int // the index after the highest seen
}

func (a *openAICalls) add(deltas []oaToolCall) {
	if a.byIndex == nil {
		a.byIndex, a.args = map[int]*ToolCall{}, map[int]*argBuffer{}
	}
	for _, d := range deltas {
		idx := a.last
		switch {
		case d.Index != nil:
			idx = *d.Index
		case len(a.byIndex) == 0 || (d.ID != "" && a.byIndex[idx].ID != "" && a.byIndex[idx].ID != d.ID):
			idx = a.next
		}
		tc := a.byIndex[idx]
		if tc == nil {
			tc = &ToolCall{}
			a.byIndex[idx], a.args[idx] = tc, &argBuffer{}
		}
		a.last, a.next = idx, max(a.next, idx+1)
		if d.ID != "" {
			tc.ID = d.ID
		}
		if d.Function.Name != "" {
			tc.Name = d.Function.Name
		}
		a.args[idx].WriteString(d.Function.Arguments)
	}
}

// list returns the calls in index order.
func (a *openAICalls) list() []ToolCall {
	idxs := make([]int, 0, len(a.byIndex))
	for idx := range a.byIndex {
		idxs = append(idxs, idx)
	}
	sort.Ints(idxs)
	out := make([]ToolCall, 0, len(idxs))
	for _, idx := range idxs {
		tc := *a.byIndex[idx]
		a.args[idx].into(&tc)
		out = append(out, tc)
	}
	return withIDs(out)
}

// withIDs gives each call the server left without an id one of ours, so
// its result can be matched.
func withIDs(calls []ToolCall) []ToolCall {
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d", i)
		}
	}
	if len(calls) == 0 {
		return nil
	}
	return calls
}

// openAIMessages writes a conversation as chat messages: an assistant's
// text and calls in one message, each tool result in its own.
func openAIMessages(conv Conversation) []oaMessage {
	out := make([]oaMessage, 0, len(conv.Messages))
	for _, m := range conv.Messages {
		msg := oaMessage{Role: string(m.Role)}
		switch m.Role {
		case RoleAssistant:
			if m.Text != "" {
				msg.Content = &m.Text
			}
			for _, tc := range m.ToolCalls {
				call := oaToolCall{ID: tc.ID, Type: "function"}
				call.Function.Name = tc.Name
				call.Function.Arguments = tc.Arguments
				if strings.TrimSpace(call.Function.Arguments) == "" {
					call.Function.Arguments = "{}"
				}
				msg.ToolCalls = append(msg.ToolCalls, call)
			}
		case RoleTool:
			msg.ToolCallID = m.Result.CallID
			content := m.Result.Content
			msg.Content = &content
		default:
			msg.Content = &m.Text
		}
		out = append(out, msg)
	}
	return out
}
