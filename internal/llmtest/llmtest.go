// Package llmtest serves scripted answers over the OpenAI chat completions
// protocol, Anthropic's messages protocol and Gemini's generateContent
// protocol, so tests drive the real
// provider clients end to end: JSON and SSE streaming replies, tool calls,
// usage reports, error statuses and Retry-After, and models that hang,
// stall mid-answer or flood. Like the real services, the servers refuse a
// conversation whose tool calls and results do not pair up.
//
// Point a model at it with OPENAI_BASE_URL=Server.URL() (or
// ANTHROPIC_BASE_URL=AnthropicServer.URL(), GEMINI_BASE_URL=GeminiServer.URL()). To serve a script from another
// process (a worker under test), mount Handler(script) on any listener.
package llmtest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Message is one chat message of a request.
type Message struct {
	Role    string
	Content string
	// ToolCalls are an assistant message's calls; ToolCallID names the
	// call a tool message answers.
	ToolCalls  []ToolCall
	ToolCallID string
}

// ToolCall is one call to a tool, sent by the model or sent back to it.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON
}

// ToolDef is a tool a request offered.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ChatRequest is what a client sent, decoded.
type ChatRequest struct {
	Model        string
	Messages     []Message
	Tools        []ToolDef
	Stream       bool
	IncludeUsage bool   // stream_options.include_usage
	MaxTokens    int    // max_tokens or max_completion_tokens
	APIKey       string // the bearer token
	// Body is the request body as the client sent it.
	Body []byte
	// CachedTokens is the prompt's prefix the server had seen before, as
	// usage.prompt_tokens_details.cached_tokens reported it.
	CachedTokens int
	// units are the prompt's cacheable pieces: each tool, each message.
	units []promptUnit
}

// LastUser returns the content of the last user message.
func (r ChatRequest) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// System returns the content of the system messages.
func (r ChatRequest) System() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == "system" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// ToolResults returns the tool messages after the last assistant message.
func (r ChatRequest) ToolResults() []Message {
	var out []Message
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "tool"; i-- {
		out = append([]Message{r.Messages[i]}, out...)
	}
	return out
}

// Reply is a scripted answer. Status 0 means 200 with Content as the
// assistant's text and ToolCalls as its calls; any other status answers
// with the protocol's error whose message is Content (or a stock message
// when empty). RetryAfter, when set, is sent as the Retry-After header.
// Delay holds the answer back before the response headers: a hanging model.
//
// A streamed answer can misbehave further: it pauses for Stall once
// StallAfter bytes of content are sent (0: right after the headers, before
// any content), the shape of a model that stalls mid-answer; and its text
// and tool-call arguments come in pieces of ChunkBytes (default 16), so a
// huge answer streams in a few large events.
type Reply struct {
	Content    string
	ToolCalls  []ToolCall
	Status     int
	RetryAfter string
	Delay      time.Duration
	Stall      time.Duration
	StallAfter int
	ChunkBytes int
	// InterleaveToolCalls streams the argument deltas of several calls
	// interleaved, told apart only by their index, as the OpenAI protocol
	// allows; by default each call is streamed whole before the next.
	InterleaveToolCalls bool
	// Thoughts, for a Gemini request asking for thought summaries
	// (thinkingConfig.includeThoughts), is sent first as a thought part.
	Thoughts string
	// BlockReason, for Gemini, answers with promptFeedback.blockReason
	// and no candidate: a blocked prompt. FinishReason replaces STOP.
	BlockReason  string
	FinishReason string
}

// Fail is a reply the script gives when a request is not what the test
// expected: the client sees an HTTP 400 quoting why.
func Fail(format string, args ...any) Reply {
	return Reply{Status: http.StatusBadRequest, Content: "llmtest: " + fmt.Sprintf(format, args...)}
}

// Script chooses the reply to a request. It may be called concurrently.
type Script func(req ChatRequest) Reply

// CountTokens is the server's deterministic token count: a quarter of the
// byte length, rounded up, close to real tokenizers on English and code.
func CountTokens(s string) int { return (len(s) + 3) / 4 }

// promptTokens counts like OpenAI's published estimate: each message costs
// its content plus 3 tokens of framing, and the reply is primed with 3 more.
func promptTokens(msgs []Message) int {
	n := promptPriming
	for _, m := range msgs {
		n += messageTokens(m)
	}
	return n
}

// promptPriming is what every prompt costs beyond its messages.
const promptPriming = 3

func messageTokens(m Message) int { return 3 + CountTokens(m.Content) + callTokens(m.ToolCalls) }

// callTokens counts tool calls by their names and arguments.
func callTokens(calls []ToolCall) int {
	n := 0
	for _, c := range calls {
		n += CountTokens(c.Name) + CountTokens(c.Arguments)
	}
	return n
}

// Server is a running scripted server, closed when the test ends.
type Server struct {
	served[ChatRequest]
}

// New starts a server answering with script.
func New(t testing.TB, script Script) *Server {
	t.Helper()
	return &Server{serve(t, newHandler(script))}
}

// Calls is the number of chat completion requests received.
func (s *Server) Calls() int { return len(s.Requests()) }

// served is a handler on a test server.
type served[R any] struct {
	srv *httptest.Server
	h   *protocolHandler[R]
}

func serve[R any](t testing.TB, h *protocolHandler[R]) served[R] {
	s := served[R]{srv: httptest.NewServer(h), h: h}
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to point a client at (OPENAI_BASE_URL,
// ANTHROPIC_BASE_URL); it ends in /v1.
func (s served[R]) URL() string { return s.srv.URL + "/v1" }

// Requests returns the decoded requests, oldest first.
func (s served[R]) Requests() []R { return s.h.rec.all() }

// Handler serves script at /v1/chat/completions and /chat/completions.
func Handler(script Script) http.Handler { return newHandler(script) }

func newHandler(script Script) *protocolHandler[ChatRequest] {
	return &protocolHandler[ChatRequest]{script: script, proto: protocol[ChatRequest]{
		path: "/chat/completions", decode: decodeRequest, fail: writeError, answer: answerChat,
		check: func(req ChatRequest) string { return pairedToolCalls(req.Messages) },
		cache: func(c *promptCache, req *ChatRequest) { req.CachedTokens = c.automatic(req.units, promptPriming) },
	}}
}

// protocol is what the servers of the wire protocols do differently.
type protocol[R any] struct {
	path string // served at the root and under /v1
	// route, when set, decides which paths are served instead of path.
	route  func(path string) bool
	decode func(*http.Request) (R, error)
	// check returns the API's complaint about a well-formed request.
	check func(R) string
	// cache, when the API caches prompts, reads the request's prompt
	// against the server's prompt cache and writes it there; see cache.go.
	cache  func(*promptCache, *R)
	fail   func(w http.ResponseWriter, status int, msg string)
	answer func(w http.ResponseWriter, r *http.Request, n int, req R, reply Reply)
}

func (p protocol[R]) serves(path string) bool {
	if p.route != nil {
		return p.route(path)
	}
	return path == "/v1"+p.path || path == p.path
}

// statusError is a decoding failure answered with a status other than 400.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

// protocolHandler records each request, refuses what the real API would,
// and answers with the script's reply.
type protocolHandler[R any] struct {
	proto  protocol[R]
	script func(R) Reply
	rec    recorder[R]
	cache  promptCache
}

func (h *protocolHandler[R]) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.proto.serves(r.URL.Path) {
		h.proto.fail(w, http.StatusNotFound, "unknown path "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		h.proto.fail(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	req, err := h.proto.decode(r)
	if err != nil {
		status := http.StatusBadRequest
		if se := (*statusError)(nil); errors.As(err, &se) {
			status = se.status
		}
		h.proto.fail(w, status, err.Error())
		return
	}
	if h.proto.cache != nil {
		h.proto.cache(&h.cache, &req)
	}
	n := h.rec.add(req)
	if msg := h.proto.check(req); msg != "" {
		h.proto.fail(w, http.StatusBadRequest, msg)
		return
	}
	reply, ok := scripted(w, r, h.script(req))
	if !ok {
		h.proto.fail(w, reply.Status, reply.Content)
		return
	}
	h.proto.answer(w, r, n, req, reply)
}

// recorder keeps the requests a server received.
type recorder[R any] struct {
	mu   sync.Mutex
	reqs []R
}

// add records a request and returns how many there are.
func (r *recorder[R]) add(req R) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return len(r.reqs)
}

func (r *recorder[R]) all() []R {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]R(nil), r.reqs...)
}

// answerChat answers a chat completion, whole or streamed.
func answerChat(w http.ResponseWriter, r *http.Request, n int, req ChatRequest, reply Reply) {
	id := fmt.Sprintf("chatcmpl-llmtest-%d", n)
	usage := usage{Prompt: promptTokens(req.Messages), Completion: CountTokens(reply.Content) + callTokens(reply.ToolCalls)}
	usage.Total = usage.Prompt + usage.Completion
	usage.Details.Cached = req.CachedTokens
	if req.Stream {
		writeStream(w, r, id, req, reply, usage)
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	if len(reply.ToolCalls) > 0 {
		if reply.Content == "" {
			msg["content"] = nil
		}
		var calls []any
		for _, c := range reply.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   req.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"finish_reason": finishReason(reply),
		}},
		"usage":              usage,
		"system_fingerprint": "llmtest",
	})
}

// scripted applies a reply's delay and Retry-After, and reports whether it
// is a success; a failure's status and message are then in the reply. It
// returns ok false with status 0 when the client went away while waiting.
func scripted(w http.ResponseWriter, r *http.Request, reply Reply) (Reply, bool) {
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return Reply{Status: http.StatusRequestTimeout, Content: "client went away"}, false
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	return reply, reply.Status == 0 || reply.Status == http.StatusOK
}

func finishReason(r Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// pairedToolCalls checks, as the OpenAI API does, that every tool call of
// an assistant message is answered by the tool messages right after it and
// that every tool message answers one. It returns the API's complaint.
func pairedToolCalls(msgs []Message) string {
	open := map[string]bool{}
	for i, m := range msgs {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				return fmt.Sprintf("Invalid parameter: messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (tool_call_id %q)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		if len(open) > 0 {
			return "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
				"The following tool_call_ids did not have response messages: " + strings.Join(slices.Sorted(maps.Keys(open)), ", ")
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	return ""
}

type usage struct {
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
	Total      int `json:"total_tokens"`
	Details    struct {
		Cached int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// wireRequest is the subset of the request body the server reads.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []wireToolCall  `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func decodeRequest(r *http.Request) (ChatRequest, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return ChatRequest{}, fmt.Errorf("read request body: %w", err)
	}
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return ChatRequest{}, fmt.Errorf("decode request body: %w", err)
	}
	var raw struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return ChatRequest{}, fmt.Errorf("decode request body: %w", err)
	}
	if len(w.Messages) == 0 {
		return ChatRequest{}, errors.New("messages must not be empty")
	}
	req := ChatRequest{
		Model:     w.Model,
		Stream:    w.Stream,
		MaxTokens: max(w.MaxTokens, w.MaxCompletionTokens),
		APIKey:    strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "),
		Body:      body,
	}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	for i, m := range w.Messages {
		text, err := messageText(m.Content)
		if err != nil {
			return ChatRequest{}, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		msg := Message{Role: m.Role, Content: text, ToolCallID: m.ToolCallID}
		for j, c := range m.ToolCalls {
			if c.ID == "" || c.Type != "function" || c.Function.Name == "" {
				return ChatRequest{}, fmt.Errorf("messages[%d].tool_calls[%d]: id, type \"function\" and function.name are required", i, j)
			}
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for i, t := range w.Tools {
		if t.Type != "function" || t.Function.Name == "" {
			return ChatRequest{}, fmt.Errorf("tools[%d]: type \"function\" and function.name are required", i)
		}
		req.Tools = append(req.Tools, ToolDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	// The prompt as the cache compares it: the tools, then each message
	// as sent, byte for byte. The tools cost nothing here, as in usage.
	for _, t := range raw.Tools {
		req.units = append(req.units, promptUnit{Key: t})
	}
	for i, m := range raw.Messages {
		req.units = append(req.units, promptUnit{Key: m, Tokens: messageTokens(req.Messages[i])})
	}
	return req, nil
}

// messageText reads content given as a string or as an array of parts,
// keeping the text parts.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// chunkBytes bounds a streamed delta, giving several chunks for any
// non-trivial answer as a real model does.
const chunkBytes = 16

// splitChunks cuts s into pieces of at most size bytes, on rune boundaries.
func splitChunks(s string, size int) []string {
	var out []string
	for len(s) > 0 {
		n := min(size, len(s))
		for n < len(s) && n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		if n == 0 { // invalid UTF-8 may hold no rune start: cut anyway
			n = min(size, len(s))
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func writeStream(w http.ResponseWriter, r *http.Request, id string, req ChatRequest, reply Reply, u usage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush() // the headers go out before any stall
	}
	created := time.Now().Unix()
	event := func(data []byte) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send := func(v any) {
		b, _ := json.Marshal(v) // plain maps and structs always marshal
		event(b)
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"system_fingerprint": "llmtest",
			"choices":            []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		if req.IncludeUsage {
			c["usage"] = nil
		}
		return c
	}
	stalled := reply.Stall <= 0
	stall := func(sent int) bool {
		if stalled || sent < reply.StallAfter {
			return true
		}
		stalled = true
		select {
		case <-time.After(reply.Stall):
			return true
		case <-r.Context().Done():
			return false
		}
	}
	if !stall(0) {
		return
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	sent := 0
	for _, piece := range splitChunks(reply.Content, cmp.Or(reply.ChunkBytes, chunkBytes)) {
		send(chunk(map[string]any{"content": piece}, nil))
		if sent += len(piece); !stall(sent) || r.Context().Err() != nil {
			return // the client hung up
		}
	}
	for _, d := range toolCallDeltas(reply.ToolCalls, reply.InterleaveToolCalls, cmp.Or(reply.ChunkBytes, chunkBytes)) {
		send(chunk(map[string]any{"tool_calls": []any{d}}, nil))
	}
	send(chunk(map[string]any{}, finishReason(reply)))
	if req.IncludeUsage {
		send(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"system_fingerprint": "llmtest", "choices": []any{}, "usage": u,
		})
	}
	event([]byte("[DONE]"))
}

// toolCallDeltas streams calls as OpenAI does: a first delta with the
// call's index, id, type and name, then its arguments in pieces carrying
// only the index. Interleaved, all calls start first and their pieces
// then alternate.
func toolCallDeltas(calls []ToolCall, interleave bool, size int) []map[string]any {
	starts := make([]map[string]any, len(calls))
	pieces := make([][]map[string]any, len(calls))
	for i, c := range calls {
		starts[i] = map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}
		for _, p := range splitChunks(c.Arguments, size) {
			pieces[i] = append(pieces[i], map[string]any{"index": i, "function": map[string]any{"arguments": p}})
		}
	}
	var out []map[string]any
	if !interleave {
		for i := range calls {
			out = append(append(out, starts[i]), pieces[i]...)
		}
		return out
	}
	out = append(out, starts...)
	for round := 0; ; round++ {
		more := false
		for i := range calls {
			if round < len(pieces[i]) {
				out = append(out, pieces[i][round])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// writeError answers like the OpenAI API does on failure.
func writeError(w http.ResponseWriter, status int, msg string) {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
		if msg == "" {
			msg = "Incorrect API key provided."
		}
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
		if msg == "" {
			msg = "Rate limit reached for requests."
		}
	case status >= 500:
		typ = "server_error"
		if msg == "" {
			msg = "The server had an error while processing your request."
		}
	case msg == "":
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client going away is not the server's error
}
