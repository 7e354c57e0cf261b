package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// The Anthropic messages protocol with tool_use and tool_result blocks,
// through Anthropic's Go SDK: its request and answer types, its HTTP layer
// over our client (limits, one attempt) and its errors. The answer is read
// here, not by the SDK's helpers, for reasons pinned in sdk_test.go:
//   - Messages.New refuses, before sending, a request that is not streamed
//     and whose max_tokens it expects to take over ten minutes, and gives
//     each attempt a ten-minute timeout of its own; Post sends what we ask.
//   - Messages.New and NewStreaming post to v1/messages under the base
//     URL, where ANTHROPIC_BASE_URL names the versioned root (…/v1), as it
//     always has here; Post takes the whole URL.
//   - Message.Accumulate grows text and tool input without a cap (text by
//     string concatenation), and replaces a tool input that is not valid
//     JSON by {}, losing what the model wrote; our reader caps both and
//     keeps the arguments as written.
//   - option.WithAPIKey sends the key as a bearer token; the key goes in
//     x-api-key, where the messages API has always taken it.

// AnthropicVersion is the messages API version tool turns speak, the one
// plain completions (langchaingo) speak too: the SDK would name its own
// newer one, which gateways and compatible servers may not know, and one
// model would answer under two versions.
const AnthropicVersion = "2023-06-01"

// newAnthropicClient is the SDK client of one model: no retries (Temporal
// owns them), nothing read from the environment or a profile on disk
// (internal/config resolves the settings), no spans.
func newAnthropicClient(hc *http.Client, key string) anthropic.Client {
	return anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithHTTPClient(hc), option.WithMaxRetries(0),
		option.WithHeader("x-api-key", key), option.WithHeader("anthropic-version", AnthropicVersion),
		option.WithOpenTelemetryTraces(false), option.WithOpenTelemetryPropagation(false))
}

func (c *client) anthropicTurn(ctx context.Context, conv Conversation, tools []Tool, maxTokens int, stream bool, onText func(string)) (TurnResult, error) {
	params, err := anthropicRequest(c.spec.Model, conv, tools, maxTokens)
	if err != nil {
		return TurnResult{}, err
	}
	if !c.noPromptCache {
		markCacheBreakpoints(&params)
	}
	url := strings.TrimSuffix(c.endpoint, "/") + "/messages"
	post := func(dst any, opts ...option.RequestOption) error { return c.an.Post(ctx, url, params, dst, opts...) }
	if !stream {
		var msg anthropic.Message
		if err := post(&msg); err != nil {
			return TurnResult{}, refusalOf(err)
		}
		return anthropicResult(&msg), nil
	}
	var resp *http.Response
	if err := post(&resp, option.WithJSONSet("stream", true)); err != nil {
		return TurnResult{}, refusalOf(err)
	}
	defer resp.Body.Close()
	return readAnthropicStream(resp.Body, c.limits.MaxAnswerBytes, onText)
}

// anthropicRequest writes a turn as the SDK's request: system messages
// join into the system prompt; tools keep their schema as written.
func anthropicRequest(model string, conv Conversation, tools []Tool, maxTokens int) (anthropic.MessageNewParams, error) {
	system, msgs, err := anthropicMessages(conv)
	if err != nil {
		return anthropic.MessageNewParams{}, err
	}
	params := anthropic.MessageNewParams{Model: anthropic.Model(model), Messages: msgs, MaxTokens: int64(maxTokens)}
	if system != "" {
		params.System = []anthropic.TextBlockParam{{Text: system}}
	}
	for _, t := range tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`) // the API requires a schema
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema)}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params, nil
}

// anthropicResult reads every block of the answer: text blocks join into
// the text, each tool_use block is one call.
func anthropicResult(m *anthropic.Message) TurnResult {
	res := TurnResult{StopReason: normalStop(string(m.StopReason)), ProviderStop: string(m.StopReason), Usage: anthropicUsage(m.Usage)}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			res.ToolCalls = append(res.ToolCalls, toolUse(b.ID, b.Name, string(b.Input)))
		}
	}
	res.Text = text.String()
	return res
}

// anthropicUsage counts every prompt token, cached or not, as InputTokens:
// the API's input_tokens are only those neither read from the cache nor
// written to it.
func anthropicUsage(u anthropic.Usage) Usage {
	return Usage{InputTokens: int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens), OutputTokens: int(u.OutputTokens),
		CacheReadTokens: int(u.CacheReadInputTokens), CacheWriteTokens: int(u.CacheCreationInputTokens)}
}

func toolUse(id, name, input string) ToolCall {
	if input == "" {
		input = "{}"
	}
	return ToolCall{ID: id, Name: name, Arguments: input}
}

// streamedBlock is a content block of a streamed answer as it grows.
type streamedBlock struct {
	kind     string // text or tool_use
	id, name string
	args     *argBuffer // a tool_use block's input
}

// readAnthropicStream rebuilds the answer from its events, each decoded
// into the SDK's event type: blocks start, grow by text or partial JSON
// deltas, and the message's stop reason and final usage come last, in
// message_delta. Text goes to onText as it comes, up to maxText bytes;
// tool input is capped by argBuffer.
func readAnthropicStream(body io.Reader, maxText int64, onText func(string)) (TurnResult, error) {
	var (
		blocks []streamedBlock
		text   = answerText{limit: maxText, onText: onText}
		usage  anthropic.Usage
		stop   anthropic.StopReason
		done   bool
	)
	block := func(i int64) (*streamedBlock, error) {
		if i < 0 || i >= int64(len(blocks)) {
			return nil, fmt.Errorf("event for content block %d, which has not started", i)
		}
		return &blocks[i], nil
	}
	err := readEvents(body, func(data []byte) error {
		var ev anthropic.MessageStreamEventUnion
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("decode stream event: %w", err)
		}
		switch ev.Type {
		case "message_start":
			usage = ev.Message.Usage
		case "content_block_start":
			if ev.Index != int64(len(blocks)) {
				return fmt.Errorf("content block %d started out of order", ev.Index)
			}
			b := streamedBlock{kind: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			if b.kind == "tool_use" {
				// The input arrives as input_json_delta; the start holds {}.
				b.args = &argBuffer{}
			}
			blocks = append(blocks, b)
		case "content_block_delta":
			b, err := block(ev.Index)
			if err != nil {
				return err
			}
			switch ev.Delta.Type {
			case "text_delta":
				if b.kind == "text" {
					if err := text.add(ev.Delta.Text); err != nil {
						return err
					}
				}
			case "input_json_delta":
				if b.args != nil {
					b.args.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "content_block_stop":
			if _, err := block(ev.Index); err != nil {
				return err
			}
		case "message_delta":
			stop = ev.Delta.StopReason
			addDeltaUsage(&usage, ev.Usage)
		case "message_stop":
			done = true
			return errStopEvents
		case "error":
			var e anthropic.ErrorResponse
			if err := json.Unmarshal(data, &e); err != nil || e.Error.Type == "" {
				return errors.New("stream failed: unknown error")
			}
			return fmt.Errorf("stream failed: %s: %s", e.Error.Type, e.Error.Message)
		}
		return nil
	})
	if err != nil {
		return TurnResult{}, err
	}
	if !done {
		return TurnResult{}, errors.New("stream ended before message_stop: the answer is incomplete")
	}
	res := TurnResult{Text: text.b.String(), StopReason: normalStop(string(stop)), ProviderStop: string(stop), Usage: anthropicUsage(usage)}
	for _, b := range blocks {
		if b.kind == "tool_use" {
			call := toolUse(b.id, b.name, "")
			if b.args.n > 0 {
				b.args.into(&call)
			}
			res.ToolCalls = append(res.ToolCalls, call)
		}
	}
	return res, nil
}

// addDeltaUsage takes message_delta's counts into the usage message_start
// gave: they are totals for the whole message, so each one sent replaces
// the earlier value; the output tokens are always sent.
func addDeltaUsage(u *anthropic.Usage, d anthropic.MessageDeltaUsage) {
	u.OutputTokens = d.OutputTokens
	if d.JSON.InputTokens.Valid() {
		u.InputTokens = d.InputTokens
	}
	if d.JSON.CacheCreationInputTokens.Valid() {
		u.CacheCreationInputTokens = d.CacheCreationInputTokens
	}
	if d.JSON.CacheReadInputTokens.Valid() {
		u.CacheReadInputTokens = d.CacheReadInputTokens
	}
}

// markCacheBreakpoints marks up to three of the four cache breakpoints the
// API allows, so that a turn pays the full input price only for what the
// turn before it did not send. The prompt is cached in the order tools,
// system, messages:
//   - the system prompt (else the last tool) closes the part every turn
//     of a conversation repeats;
//   - the last block of the previous turn's newest message, where that
//     turn wrote its cache, is the prefix this turn reads back;
//   - the last block of the newest message writes the prefix the next
//     turn will read.
//
// The API looks back only 20 blocks from a breakpoint for an earlier
// entry, so the previous turn's end is marked rather than left to that
// search: a turn with many tool results would otherwise miss it.
func markCacheBreakpoints(params *anthropic.MessageNewParams) {
	switch {
	case len(params.System) > 0:
		params.System[len(params.System)-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	case len(params.Tools) > 0:
		if cc := params.Tools[len(params.Tools)-1].GetCacheControl(); cc != nil {
			*cc = anthropic.NewCacheControlEphemeralParam()
		}
	}
	msgs := params.Messages
	last := len(msgs) - 1
	if last < 0 {
		return
	}
	mark := func(i int) {
		b := messageBlocks(msgs[i])
		if len(b) == 0 { // an empty answer has no block to mark
			return
		}
		if cc := b[len(b)-1].GetCacheControl(); cc != nil {
			*cc = anthropic.NewCacheControlEphemeralParam()
		}
	}
	mark(last)
	// The previous turn ended on the user message before the last
	// assistant message.
	for i := last - 1; i > 0; i-- {
		if msgs[i].OfAssistant != nil {
			if msgs[i-1].OfUser != nil {
				mark(i - 1)
			}
			return
		}
	}
}

func messageBlocks(m anthropic.MessageParam) []anthropic.ContentBlockParamUnion {
	switch {
	case m.OfUser != nil:
		return m.OfUser.Content
	case m.OfAssistant != nil:
		return m.OfAssistant.Content
	}
	return nil
}

// anthropicMessages writes a conversation as Anthropic messages: system
// messages join into the system prompt; an assistant message carries its
// text and every call as blocks; consecutive tool results (and a user
// message after them) share one user message, results first, as the API
// requires.
func anthropicMessages(conv Conversation) (string, []anthropic.MessageParam, error) {
	var system []string
	var out []anthropic.MessageParam
	add := func(assistant bool, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(out); n > 0 && (out[n-1].OfAssistant != nil) == assistant {
			if assistant {
				out[n-1].OfAssistant.Content = append(out[n-1].OfAssistant.Content, blocks...)
			} else {
				out[n-1].OfUser.Content = append(out[n-1].OfUser.Content, blocks...)
			}
			return
		}
		if assistant {
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		} else {
			out = append(out, anthropic.NewUserMessage(blocks...))
		}
	}
	for i, m := range conv.Messages {
		switch m.Role {
		case RoleSystem:
			system = append(system, m.Text)
		case RoleUser:
			add(false, anthropic.NewTextBlock(m.Text))
		case RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Text != "" { // the API refuses empty text blocks
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, tc := range m.ToolCalls {
				input, err := argumentsObject(tc.Arguments)
				if err != nil {
					return "", nil, fmt.Errorf("%w: message %d: tool call %q arguments: %w", ErrBadConversation, i, tc.ID, err)
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input, tc.Name))
			}
			add(true, blocks...)
		case RoleTool:
			add(false, toolResult(m.Result))
		}
	}
	return strings.Join(system, "\n\n"), out, nil
}

// toolResult is a result's block: its content as one text block, none
// when empty (the API refuses empty text blocks), and is_error only when set.
func toolResult(r *ToolResult) anthropic.ContentBlockParamUnion {
	b := anthropic.ToolResultBlockParam{ToolUseID: r.CallID}
	if r.Content != "" {
		b.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: r.Content}}}
	}
	if r.IsError {
		b.IsError = anthropic.Bool(true)
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &b}
}
