package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"
)

// The OpenAI chat completions protocol with tools, as OpenAI, Ollama (under
// /v1) and other compatible servers speak it, through OpenAI's Go SDK: its
// request and answer types, its HTTP layer over our client (limits, one
// attempt) and its errors. A streamed answer is read here, each chunk
// decoded into the SDK's type, for reasons pinned in sdk_test.go:
//   - the SDK's Stream ends without an error when a stream stops before
//     [DONE], so a cut answer would pass for a whole one;
//   - ChatCompletionAccumulator keys tool-call deltas by their index, which
//     some compatible servers leave out: every call then merges into the
//     first; and it gathers text and arguments without a cap.

// newOpenAIChat is the SDK's chat completions service at baseURL: no
// retries (Temporal owns them), nothing read from the environment
// (internal/config resolves the settings), the key as a bearer token when
// there is one.
func newOpenAIChat(hc *http.Client, baseURL, key string) openai.ChatCompletionService {
	opts := []option.RequestOption{option.WithBaseURL(baseURL), option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return openai.NewChatCompletionService(opts...)
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
	params, err := c.openAIRequest(conv, tools, maxTokens, stream)
	if err != nil {
		return TurnResult{}, err
	}
	if !stream {
		whole, err := c.oa.New(ctx, params)
		if err != nil {
			return TurnResult{}, refusalOf(err)
		}
		return openAIWhole(whole), nil
	}
	// The raw event stream, unread: see the file comment.
	var resp *http.Response
	if _, err := c.oa.New(ctx, params, option.WithJSONSet("stream", true), option.WithResponseBodyInto(&resp)); err != nil {
		return TurnResult{}, refusalOf(err)
	}
	defer resp.Body.Close()
	return readOpenAIStream(resp.Body, c.limits.MaxAnswerBytes, onText)
}

func (c *client) openAIRequest(conv Conversation, tools []Tool, maxTokens int, stream bool) (openai.ChatCompletionNewParams, error) {
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.spec.Model), Messages: openAIMessages(conv)}
	for _, t := range tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if len(t.Parameters) > 0 {
			schema, err := functionParameters(t.Parameters)
			if err != nil {
				return params, fmt.Errorf("%w: tool %q parameters: %w", ErrBadConversation, t.Name, err)
			}
			fn.Parameters = schema
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if maxTokens > 0 {
		// Compatible servers widely accept max_tokens but not always the
		// newer max_completion_tokens.
		if c.legacyMaxTokens || c.spec.Provider == ProviderOllama {
			params.MaxTokens = openai.Int(int64(maxTokens))
		} else {
			params.MaxCompletionTokens = openai.Int(int64(maxTokens))
		}
	}
	if stream {
		params.StreamOptions.IncludeUsage = openai.Bool(true)
	}
	return params, nil
}

// functionParameters reads a tool's JSON schema as the SDK's map, its
// numbers kept as written.
func functionParameters(schema json.RawMessage) (shared.FunctionParameters, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var out shared.FunctionParameters
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// openAIWhole reads a whole answer's first choice.
func openAIWhole(r *openai.ChatCompletion) TurnResult {
	var ch openai.ChatCompletionChoice
	if len(r.Choices) > 0 {
		ch = r.Choices[0]
	}
	calls := make([]ToolCall, 0, len(ch.Message.ToolCalls))
	for _, tc := range ch.Message.ToolCalls {
		calls = append(calls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return openAIResult(r.Usage, ch.Message.Content, ch.FinishReason, withIDs(calls))
}

func openAIResult(u openai.CompletionUsage, text, finish string, calls []ToolCall) TurnResult {
	return TurnResult{Text: text, ToolCalls: calls, StopReason: normalStop(finish), ProviderStop: finish, Usage: openAIUsage(u)}
}

// openAIUsage reads the prompt's cached tokens, and those written to the
// cache where the server says so, as parts of the whole prompt.
func openAIUsage(u openai.CompletionUsage) Usage {
	prompt := int(u.PromptTokens)
	read := min(int(u.PromptTokensDetails.CachedTokens), prompt)
	return Usage{InputTokens: prompt, OutputTokens: int(u.CompletionTokens), CacheReadTokens: read,
		CacheWriteTokens: min(int(u.PromptTokensDetails.CacheWriteTokens), prompt-read)}
}

// readOpenAIStream gathers a streamed answer, each chunk decoded into the
// SDK's type: text deltas go to onText as they come, up to maxText bytes,
// tool-call deltas are joined by openAICalls, and usage comes in the last
// chunk (stream_options.include_usage).
func readOpenAIStream(body io.Reader, maxText int64, onText func(string)) (TurnResult, error) {
	var (
		text   = answerText{limit: maxText, onText: onText}
		calls  openAICalls
		finish string
		usage  openai.CompletionUsage
		done   bool
	)
	err := readEvents(body, func(data []byte) error {
		if string(data) == "[DONE]" {
			done = true
			return errStopEvents
		}
		var chunk openai.ChatCompletionChunk
		if err := json.Unmarshal(data, &chunk); err != nil {
			return fmt.Errorf("decode stream chunk: %w", err)
		}
		// Extra fields are never Valid (the type has no field for them): a
		// present, non-null error is the failure.
		if failure, ok := chunk.JSON.ExtraFields["error"]; ok && failure.Raw() != respjson.Null {
			return fmt.Errorf("stream failed: %s", streamFailure(failure.Raw()))
		}
		if chunk.JSON.Usage.Valid() {
			usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			if err := text.add(ch.Delta.Content); err != nil {
				return err
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
	return openAIResult(usage, text.b.String(), finish, calls.list()), nil
}

// streamFailure is the message of the error a stream reports in place of
// a chunk once it has begun, which the SDK's chunk type keeps as an extra
// field: its message, else the error as sent.
func streamFailure(raw string) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal([]byte(raw), &e) != nil || e.Message == "" {
		return raw
	}
	return e.Message
}

// openAICalls joins streamed tool-call deltas. A delta continues the call
// its index names; from servers that send no index (one call at a time) it
// continues the last call unless it brings a new id. Arguments are capped
// as they arrive (argBuffer).
type openAICalls struct {
	byIndex map[int]*ToolCall
	args    map[int]*argBuffer
	last    int
	next    int // the index after the highest seen
}

func (a *openAICalls) add(deltas []openai.ChatCompletionChunkChoiceDeltaToolCall) {
	if a.byIndex == nil {
		a.byIndex, a.args = map[int]*ToolCall{}, map[int]*argBuffer{}
	}
	for _, d := range deltas {
		idx := a.last
		switch {
		case d.JSON.Index.Valid():
			idx = int(d.Index)
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
func openAIMessages(conv Conversation) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(conv.Messages))
	for _, m := range conv.Messages {
		switch m.Role {
		case RoleSystem:
			out = append(out, openai.SystemMessage(m.Text))
		case RoleAssistant:
			msg := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				msg.Content.OfString = openai.String(m.Text)
			}
			for _, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
				}
				msg.ToolCalls = append(msg.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args}}})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &msg})
		case RoleTool:
			out = append(out, openai.ToolMessage(m.Result.Content, m.Result.CallID))
		default:
			out = append(out, openai.UserMessage(m.Text))
		}
	}
	return out
}
