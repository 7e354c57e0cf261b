package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The Anthropic messages protocol with tool_use and tool_result blocks.

// anthropicVersion is the API version the request and event shapes below follow.
const anthropicVersion = "2023-06-01"

type anRequest struct {
	Model     string      `json:"model"`
	System    []anBlock   `json:"system,omitempty"`
	Messages  []anMessage `json:"messages"`
	Tools     []anTool    `json:"tools,omitempty"`
	MaxTokens int         `json:"max_tokens"`
	Stream    bool        `json:"stream,omitempty"`
}

type anTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *anCacheControl `json:"cache_control,omitempty"`
}

// anCacheControl marks a cache breakpoint: the prompt up to and including
// the block carrying it is cached, and read back by a later request whose
// prompt begins with the same blocks.
type anCacheControl struct {
	Type string `json:"type"` // "ephemeral"
}

// ephemeral is the breakpoint of the default (five-minute) cache.
var ephemeral = &anCacheControl{Type: "ephemeral"}

type anMessage struct {
	Role    string    `json:"role"`
	Content []anBlock `json:"content"`
}

// anBlock is a content block of any type; the fields of other types stay empty.
type anBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// args gathers a streamed tool_use block's input; never sent.
	args *argBuffer
	// tool_result
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	// CacheControl marks a cache breakpoint after this block.
	CacheControl *anCacheControl `json:"cache_control,omitempty"`
}

type anUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// input counts every prompt token, cached or not.
func (u anUsage) input() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

type anResponse struct {
	Content    []anBlock `json:"content"`
	StopReason string    `json:"stop_reason"`
	Usage      anUsage   `json:"usage"`
}

// anEvent is one event of a streamed answer.
type anEvent struct {
	Type         string      `json:"type"`
	Message      *anResponse `json:"message"`       // message_start
	Index        int         `json:"index"`         // content_block_*
	ContentBlock *anBlock    `json:"content_block"` // content_block_start
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`         // text_delta
		PartialJSON string `json:"partial_json"` // input_json_delta
		StopReason  string `json:"stop_reason"`  // message_delta
	} `json:"delta"`
	Usage *anUsage `json:"usage"` // message_delta
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *client) anthropicTurn(ctx context.Context, conv Conversation, tools []Tool, maxTokens int, stream bool, onText func(string)) (TurnResult, error) {
	system, msgs, err := anthropicMessages(conv)
	if err != nil {
		return TurnResult{}, err
	}
	req := anRequest{Model: c.spec.Model, Messages: msgs, MaxTokens: maxTokens, Stream: stream}
	if system != "" {
		req.System = []anBlock{{Type: "text", Text: system}}
	}
	for _, t := range tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`) // the API requires a schema
		}
		req.Tools = append(req.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if !c.noPromptCache {
		markCacheBreakpoints(&req)
	}
	header := http.Header{}
	header.Set("x-api-key", c.key)
	header.Set("anthropic-version", anthropicVersion)
	return exchangeTurn(ctx, c, strings.TrimSuffix(c.endpoint, "/")+"/messages", header, req, stream, anthropicResult,
		func(body io.Reader) (TurnResult, error) {
			r, err := readAnthropicStream(body, onText)
			return anthropicResult(r), err
		})
}

// anthropicResult reads every block of the answer: text blocks join into
// the text, each tool_use block is one call.
func anthropicResult(r anResponse) TurnResult {
	res := TurnResult{StopReason: normalStop(r.StopReason), ProviderStop: r.StopReason,
		Usage: Usage{InputTokens: r.Usage.input(), OutputTokens: r.Usage.OutputTokens,
			CacheReadTokens: r.Usage.CacheReadInputTokens, CacheWriteTokens: r.Usage.CacheCreationInputTokens}}
	var text strings.Builder
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			c := ToolCall{ID: b.ID, Name: b.Name, Arguments: string(b.Input)}
			if b.args != nil && b.args.n > 0 {
				b.args.into(&c)
			}
			if c.Arguments == "" {
				c.Arguments = "{}"
			}
			res.ToolCalls = append(res.ToolCalls, c)
		}
	}
	res.Text = text.String()
	return res
}

// readAnthropicStream rebuilds the answer from its events: blocks start,
// grow by text or partial JSON deltas, and the message's stop reason and
// output tokens come last, in message_delta.
func readAnthropicStream(body io.Reader, onText func(string)) (anResponse, error) {
	var (
		r       anResponse
		partial = map[int]*argBuffer{} // tool_use input JSON by block index
		done    bool
	)
	block := func(i int) (*anBlock, error) {
		if i < 0 || i >= len(r.Content) {
			return nil, fmt.Errorf("event for content block %d, which has not started", i)
		}
		return &r.Content[i], nil
	}
	err := readEvents(body, func(data []byte) error {
		var ev anEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return fmt.Errorf("decode stream event: %w", err)
		}
		switch ev.Type {
		case "message_start":
			if ev.Message != nil {
				r.Usage = ev.Message.Usage
			}
		case "content_block_start":
			if ev.ContentBlock == nil || ev.Index != len(r.Content) {
				return fmt.Errorf("content block %d started out of order", ev.Index)
			}
			b := *ev.ContentBlock
			if b.Type == "tool_use" {
				// The input arrives as input_json_delta; the start holds {}.
				b.Input = nil
				partial[ev.Index] = &argBuffer{}
			}
			r.Content = append(r.Content, b)
		case "content_block_delta":
			b, err := block(ev.Index)
			if err != nil {
				return err
			}
			switch ev.Delta.Type {
			case "text_delta":
				b.Text += ev.Delta.Text
				onText(ev.Delta.Text)
			case "input_json_delta":
				if p := partial[ev.Index]; p != nil {
					p.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "content_block_stop":
			b, err := block(ev.Index)
			if err != nil {
				return err
			}
			if p := partial[ev.Index]; p != nil {
				b.args = p
			}
		case "message_delta":
			r.StopReason = ev.Delta.StopReason
			if ev.Usage != nil {
				r.Usage.OutputTokens = ev.Usage.OutputTokens
			}
		case "message_stop":
			done = true
			return errStopEvents
		case "error":
			msg := "unknown error"
			if ev.Error != nil {
				msg = ev.Error.Type + ": " + ev.Error.Message
			}
			return fmt.Errorf("stream failed: %s", msg)
		}
		return nil
	})
	if err != nil {
		return anResponse{}, err
	}
	if !done {
		return anResponse{}, errors.New("stream ended before message_stop: the answer is incomplete")
	}
	return r, nil
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
func markCacheBreakpoints(req *anRequest) {
	switch {
	case len(req.System) > 0:
		req.System[len(req.System)-1].CacheControl = ephemeral
	case len(req.Tools) > 0:
		req.Tools[len(req.Tools)-1].CacheControl = ephemeral
	}
	last := len(req.Messages) - 1
	if last < 0 {
		return
	}
	mark := func(i int) {
		b := req.Messages[i].Content
		if len(b) == 0 { // an empty answer has no block to mark
			return
		}
		b[len(b)-1].CacheControl = ephemeral
	}
	mark(last)
	// The previous turn ended on the user message before the last
	// assistant message.
	for i := last - 1; i > 0; i-- {
		if req.Messages[i].Role == "assistant" {
			if req.Messages[i-1].Role == "user" {
				mark(i - 1)
			}
			return
		}
	}
}

// anthropicMessages writes a conversation as Anthropic messages: system
// messages join into the system prompt; an assistant message carries its
// text and every call as blocks; consecutive tool results (and a user
// message after them) share one user message, results first, as the API
// requires.
func anthropicMessages(conv Conversation) (string, []anMessage, error) {
	var system []string
	var out []anMessage
	add := func(role string, blocks ...anBlock) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, anMessage{Role: role, Content: blocks})
	}
	for i, m := range conv.Messages {
		switch m.Role {
		case RoleSystem:
			system = append(system, m.Text)
		case RoleUser:
			add("user", anBlock{Type: "text", Text: m.Text})
		case RoleAssistant:
			var blocks []anBlock
			if m.Text != "" { // the API refuses empty text blocks
				blocks = append(blocks, anBlock{Type: "text", Text: m.Text})
			}
			for _, tc := range m.ToolCalls {
				input, err := argumentsObject(tc.Arguments)
				if err != nil {
					return "", nil, fmt.Errorf("%w: message %d: tool call %q arguments: %w", ErrBadConversation, i, tc.ID, err)
				}
				blocks = append(blocks, anBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
			}
			add("assistant", blocks...)
		case RoleTool:
			add("user", anBlock{Type: "tool_result", ToolUseID: m.Result.CallID, Content: m.Result.Content, IsError: m.Result.IsError})
		}
	}
	return strings.Join(system, "\n\n"), out, nil
}
