package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Block is one content block of an Anthropic message: text, tool_use
// (ID, Name, Input) or tool_result (ToolUseID, Content, IsError).
type Block struct {
	Type      string
	Text      string
	ID        string
	Name      string
	Input     json.RawMessage
	ToolUseID string
	Content   string
	IsError   bool
}

// AnthropicMessage is one message of a messages request, its content as
// blocks even when the client sent a plain string.
type AnthropicMessage struct {
	Role   string
	Blocks []Block
}

// MessagesRequest is what a client sent to the messages API, decoded.
type MessagesRequest struct {
	Model     string
	System    string
	Messages  []AnthropicMessage
	Tools     []ToolDef
	MaxTokens int
	Stream    bool
	APIKey    string // x-api-key
	Version   string // anthropic-version
	// Body is the request body as the client sent it.
	Body []byte
	// Breakpoints counts the blocks marked with cache_control;
	// CacheReadTokens and CacheWriteTokens are the input the server read
	// from its prompt cache and wrote to it, as the usage reported them.
	Breakpoints      int
	CacheReadTokens  int
	CacheWriteTokens int
	// InputTokens is the whole prompt's count, cached or not.
	InputTokens int
	// units are the prompt's cacheable pieces: each tool, system block and
	// content block, in that order.
	units []promptUnit
}

// LastUser returns the text of the last user message.
func (r MessagesRequest) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "user" {
			var b strings.Builder
			for _, bl := range m.Blocks {
				b.WriteString(bl.Text)
			}
			return b.String()
		}
	}
	return ""
}

// ToolResults returns the tool_result blocks of the last message.
func (r MessagesRequest) ToolResults() []Block {
	if len(r.Messages) == 0 {
		return nil
	}
	var out []Block
	for _, b := range r.Messages[len(r.Messages)-1].Blocks {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// AnthropicScript chooses the reply to a messages request. Reply.Content
// becomes a text block and each of Reply.ToolCalls a tool_use block after
// it. It may be called concurrently.
type AnthropicScript func(req MessagesRequest) Reply

// AnthropicServer is a running scripted messages API, closed when the test ends.
type AnthropicServer struct {
	served[MessagesRequest]
}

// NewAnthropic starts a server answering the messages API with script.
func NewAnthropic(t testing.TB, script AnthropicScript) *AnthropicServer {
	t.Helper()
	return &AnthropicServer{serve(t, newAnthropicHandler(script))}
}

// AnthropicHandler serves script at /v1/messages and /messages.
func AnthropicHandler(script AnthropicScript) http.Handler { return newAnthropicHandler(script) }

func newAnthropicHandler(script AnthropicScript) *protocolHandler[MessagesRequest] {
	return &protocolHandler[MessagesRequest]{script: script, proto: protocol[MessagesRequest]{
		path: "/messages", decode: decodeMessages, fail: writeAnthropicError, answer: answerMessages,
		check: func(req MessagesRequest) string {
			if req.Breakpoints > maxBreakpoints {
				return fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", maxBreakpoints, req.Breakpoints)
			}
			return pairedToolUse(req.Messages)
		},
		cache: func(c *promptCache, req *MessagesRequest) {
			req.InputTokens = inputTokens(*req)
			if req.Breakpoints <= maxBreakpoints {
				req.CacheReadTokens, req.CacheWriteTokens = c.explicit(req.units, 0)
			}
		},
	}}
}

// answerMessages answers a messages request, whole or streamed.
func answerMessages(w http.ResponseWriter, _ *http.Request, n int, req MessagesRequest, reply Reply) {
	id := fmt.Sprintf("msg_llmtest_%d", n)
	var blocks []map[string]any
	if reply.Content != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": reply.Content})
	}
	for _, c := range reply.ToolCalls {
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)})
	}
	stop := "end_turn"
	if len(reply.ToolCalls) > 0 {
		stop = "tool_use"
	}
	out := CountTokens(reply.Content) + callTokens(reply.ToolCalls)
	// input_tokens counts only what was neither read from the cache nor
	// written to it.
	usage := map[string]any{"input_tokens": req.InputTokens - req.CacheReadTokens - req.CacheWriteTokens, "output_tokens": out,
		"cache_read_input_tokens": req.CacheReadTokens, "cache_creation_input_tokens": req.CacheWriteTokens}
	if req.Stream {
		writeAnthropicStream(w, id, req.Model, blocks, stop, usage, out)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model,
		"content": blocks, "stop_reason": stop, "stop_sequence": nil,
		"usage": usage,
	})
}

// inputTokens counts the system prompt and every block, plus 3 tokens of
// framing a message.
func inputTokens(req MessagesRequest) int {
	n := 0
	for _, u := range req.units {
		n += u.Tokens
	}
	return n
}

// blockTokens is what a content block adds to the prompt.
func blockTokens(b Block) int {
	return CountTokens(b.Text) + CountTokens(b.Name) + CountTokens(string(b.Input)) + CountTokens(b.Content)
}

// writeAnthropicStream sends the answer as the messages API streams it:
// message_start with the input tokens, each block as start, deltas (text
// or partial JSON of the tool input) and stop, then message_delta with the
// stop reason and output tokens, and message_stop.
func writeAnthropicStream(w http.ResponseWriter, id, model string, blocks []map[string]any, stop string, usage map[string]any, out int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(event string, v map[string]any) {
		v["type"] = event
		b, _ := json.Marshal(v) // plain maps always marshal
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	start := maps.Clone(usage) // the output tokens come last, in message_delta
	start["output_tokens"] = 1
	send("message_start", map[string]any{"message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	send("ping", map[string]any{})
	for i, b := range blocks {
		start := map[string]any{}
		for k, v := range b {
			start[k] = v
		}
		var deltas []map[string]any
		if b["type"] == "text" {
			start["text"] = ""
			for _, p := range splitChunks(b["text"].(string), chunkBytes) {
				deltas = append(deltas, map[string]any{"type": "text_delta", "text": p})
			}
		} else {
			start["input"] = map[string]any{}
			for _, p := range splitChunks(string(b["input"].(json.RawMessage)), chunkBytes) {
				deltas = append(deltas, map[string]any{"type": "input_json_delta", "partial_json": p})
			}
		}
		send("content_block_start", map[string]any{"index": i, "content_block": start})
		for _, d := range deltas {
			send("content_block_delta", map[string]any{"index": i, "delta": d})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	send("message_stop", map[string]any{})
}

// pairedToolUse checks, as the messages API does once consecutive messages
// of one role are merged, that tool_use ids are unique in the request, that
// each tool_use block is answered by a tool_result in the next message and
// that each tool_result answers a tool_use of the message before. It
// returns the API's complaint.
func pairedToolUse(msgs []AnthropicMessage) string {
	var merged []AnthropicMessage
	for _, m := range msgs {
		if n := len(merged); n > 0 && merged[n-1].Role == m.Role {
			merged[n-1].Blocks = append(append([]Block(nil), merged[n-1].Blocks...), m.Blocks...)
			continue
		}
		merged = append(merged, m)
	}
	if len(merged) > 0 && merged[0].Role != "user" {
		return "messages: first message must use the \"user\" role"
	}
	ids := map[string]bool{}
	for i, m := range merged {
		for j, b := range m.Blocks {
			if b.Type == "tool_use" && ids[b.ID] {
				return fmt.Sprintf("messages.%d.content.%d: `tool_use` ids must be unique", i, j)
			}
			ids[b.ID] = true
		}
	}
	for i, m := range merged {
		uses := map[string]bool{}
		if i > 0 {
			for _, b := range merged[i-1].Blocks {
				if b.Type == "tool_use" {
					uses[b.ID] = true
				}
			}
		}
		for _, b := range m.Blocks {
			if b.Type != "tool_result" {
				continue
			}
			if !uses[b.ToolUseID] {
				return fmt.Sprintf("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
					"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, b.ToolUseID)
			}
			delete(uses, b.ToolUseID)
		}
		if i > 0 && len(uses) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(slices.Sorted(maps.Keys(uses)), ", "))
		}
	}
	return ""
}

type wireMessages struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	MaxTokens int  `json:"max_tokens"`
	Stream    bool `json:"stream"`
}

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// rawMessages is the request body's prompt, each piece as sent.
type rawMessages struct {
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []json.RawMessage `json:"tools"`
}

// cacheUnits splits the prompt into the pieces the cache compares, each
// without its cache_control (a breakpoint moved is the same prompt), and
// counts the breakpoints.
func cacheUnits(raw rawMessages, req *MessagesRequest) error {
	add := func(role string, piece json.RawMessage, tokens int) error {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(piece, &fields); err != nil {
			// A plain string: content without blocks, and no breakpoint.
			req.units = append(req.units, promptUnit{Key: append([]byte(role+"\x00"), piece...), Tokens: tokens})
			return nil
		}
		_, marked := fields["cache_control"]
		delete(fields, "cache_control")
		key, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		if marked {
			req.Breakpoints++
		}
		req.units = append(req.units, promptUnit{Key: append([]byte(role+"\x00"), key...), Tokens: tokens, Breakpoint: marked})
		return nil
	}
	pieces := func(content json.RawMessage) []json.RawMessage {
		var list []json.RawMessage
		if json.Unmarshal(content, &list) != nil {
			return []json.RawMessage{content}
		}
		return list
	}
	for _, t := range raw.Tools {
		if err := add("tool", t, 0); err != nil {
			return err
		}
	}
	if len(raw.System) > 0 && string(raw.System) != "null" {
		for _, p := range pieces(raw.System) {
			var b wireBlock
			_ = json.Unmarshal(p, &b) // a string holds no block; its text is counted below
			text := b.Text
			if b.Type == "" {
				_ = json.Unmarshal(p, &text)
			}
			if err := add("system", p, CountTokens(text)); err != nil {
				return err
			}
		}
	}
	for i, m := range raw.Messages {
		for j, p := range pieces(m.Content) {
			tokens := blockTokens(req.Messages[i].Blocks[j])
			if j == 0 {
				tokens += 3
			}
			if err := add(req.Messages[i].Role, p, tokens); err != nil {
				return err
			}
		}
	}
	return nil
}

func decodeMessages(r *http.Request) (MessagesRequest, error) {
	if r.Header.Get("x-api-key") == "" {
		return MessagesRequest{}, &statusError{http.StatusUnauthorized, "x-api-key header is required"}
	}
	if r.Header.Get("anthropic-version") == "" {
		return MessagesRequest{}, errors.New("anthropic-version: header is required")
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return MessagesRequest{}, fmt.Errorf("read request body: %w", err)
	}
	var w wireMessages
	if err := json.Unmarshal(body, &w); err != nil {
		return MessagesRequest{}, fmt.Errorf("decode request body: %w", err)
	}
	if w.MaxTokens <= 0 {
		return MessagesRequest{}, errors.New("max_tokens: field required")
	}
	if len(w.Messages) == 0 {
		return MessagesRequest{}, errors.New("messages: at least one message is required")
	}
	req := MessagesRequest{Model: w.Model, MaxTokens: w.MaxTokens, Stream: w.Stream,
		APIKey: r.Header.Get("x-api-key"), Version: r.Header.Get("anthropic-version"), Body: body}
	system, err := blocksOf(w.System)
	if err != nil {
		return MessagesRequest{}, fmt.Errorf("system: %w", err)
	}
	for _, b := range system {
		req.System += b.Text
	}
	for i, m := range w.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return MessagesRequest{}, fmt.Errorf("messages.%d.role: must be \"user\" or \"assistant\"", i)
		}
		blocks, err := blocksOf(m.Content)
		if err != nil {
			return MessagesRequest{}, fmt.Errorf("messages.%d.content: %w", i, err)
		}
		if len(blocks) == 0 {
			return MessagesRequest{}, fmt.Errorf("messages.%d: all messages must have non-empty content", i)
		}
		req.Messages = append(req.Messages, AnthropicMessage{Role: m.Role, Blocks: blocks})
	}
	for i, t := range w.Tools {
		if t.Name == "" || len(t.InputSchema) == 0 {
			return MessagesRequest{}, fmt.Errorf("tools.%d: name and input_schema are required", i)
		}
		req.Tools = append(req.Tools, ToolDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	var raw rawMessages
	if err := json.Unmarshal(body, &raw); err != nil {
		return MessagesRequest{}, fmt.Errorf("decode request body: %w", err)
	}
	if err := cacheUnits(raw, &req); err != nil {
		return MessagesRequest{}, fmt.Errorf("decode request body: %w", err)
	}
	return req, nil
}

// blocksOf reads content given as a string or as an array of blocks.
func blocksOf(raw json.RawMessage) ([]Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return []Block{{Type: "text", Text: s}}, nil
	}
	var wire []wireBlock
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, errors.New("must be a string or an array of content blocks")
	}
	out := make([]Block, 0, len(wire))
	for i, w := range wire {
		b := Block{Type: w.Type, Text: w.Text, ID: w.ID, Name: w.Name, Input: w.Input, ToolUseID: w.ToolUseID, IsError: w.IsError}
		switch w.Type {
		case "text":
			if w.Text == "" {
				return nil, fmt.Errorf("%d: text content blocks must be non-empty", i)
			}
		case "tool_use":
			var obj map[string]any
			if w.ID == "" || w.Name == "" || json.Unmarshal(w.Input, &obj) != nil || obj == nil {
				return nil, fmt.Errorf("%d: tool_use needs id, name and an object input", i)
			}
		case "tool_result":
			if w.ToolUseID == "" {
				return nil, fmt.Errorf("%d.tool_use_id: field required", i)
			}
			inner, err := blocksOf(w.Content)
			if err != nil {
				return nil, fmt.Errorf("%d.content: %w", i, err)
			}
			for _, ib := range inner {
				b.Content += ib.Text
			}
		default:
			return nil, fmt.Errorf("%d: unknown content block type %q", i, w.Type)
		}
		out = append(out, b)
	}
	return out, nil
}

// writeAnthropicError answers like the messages API does on failure.
func writeAnthropicError(w http.ResponseWriter, status int, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

// Steps answers the n-th request with the n-th step, for either protocol;
// each step may check what the request carried and answer with Fail when
// it is wrong. Requests past the last step get a 500 naming the exhaustion.
func Steps[R any](steps ...func(R) Reply) func(R) Reply {
	var mu sync.Mutex
	next := 0
	return func(req R) Reply {
		mu.Lock()
		i := next
		next++
		mu.Unlock()
		if i >= len(steps) {
			return Reply{Status: http.StatusInternalServerError, Content: fmt.Sprintf("llmtest: all %d steps taken", len(steps))}
		}
		return steps[i](req)
	}
}
