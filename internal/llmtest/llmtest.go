// Package llmtest serves scripted answers over the OpenAI chat completions
// protocol, so tests drive the real provider client end to end: JSON and
// SSE streaming replies, usage reports, error statuses and Retry-After, and
// models that hang, stall mid-answer or flood.
//
// Point a model at it with OPENAI_BASE_URL=Server.URL(). To serve a script
// from another process (a worker under test), mount Handler(script) on any
// listener.
package llmtest

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
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
}

// ChatRequest is what a client sent, decoded.
type ChatRequest struct {
	Model        string
	Messages     []Message
	Stream       bool
	IncludeUsage bool   // stream_options.include_usage
	MaxTokens    int    // max_tokens or max_completion_tokens
	APIKey       string // the bearer token
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

// Reply is a scripted answer. Status 0 means 200 with Content as the
// assistant's message; any other status answers with an OpenAI-style error
// whose message is Content (or a stock message when empty). RetryAfter, when
// set, is sent as the Retry-After header. Delay holds the answer back
// before the response headers: a hanging model.
//
// A streamed answer can misbehave further: it pauses for Stall once
// StallAfter bytes of content are sent (0: right after the headers, before
// any content), the shape of a model that stalls mid-answer; and it comes
// in pieces of ChunkBytes (default 16), so a huge answer streams in a few
// large events.
type Reply struct {
	Content    string
	Status     int
	RetryAfter string
	Delay      time.Duration
	Stall      time.Duration
	StallAfter int
	ChunkBytes int
}

// Script chooses the reply to a request. It may be called concurrently.
type Script func(req ChatRequest) Reply

// CountTokens is the server's deterministic token count: a quarter of the
// byte length, rounded up, close to real tokenizers on English and code.
func CountTokens(s string) int { return (len(s) + 3) / 4 }

// promptTokens counts like OpenAI's published estimate: each message costs
// its content plus 3 tokens of framing, and the reply is primed with 3 more.
func promptTokens(msgs []Message) int {
	n := 3
	for _, m := range msgs {
		n += 3 + CountTokens(m.Content)
	}
	return n
}

// Server is a running scripted server, closed when the test ends.
type Server struct {
	srv *httptest.Server
	h   *handler
}

// New starts a server answering with script.
func New(t testing.TB, script Script) *Server {
	t.Helper()
	h := newHandler(script)
	s := &Server{srv: httptest.NewServer(h), h: h}
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the base URL to use as OPENAI_BASE_URL; it ends in /v1.
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Calls is the number of chat completion requests received.
func (s *Server) Calls() int { return s.h.calls() }

// Requests returns the decoded chat completion requests, oldest first.
func (s *Server) Requests() []ChatRequest { return s.h.requests() }

// Handler serves script at /v1/chat/completions and /chat/completions.
func Handler(script Script) http.Handler { return newHandler(script) }

type handler struct {
	script Script
	mu     sync.Mutex
	reqs   []ChatRequest
}

func newHandler(script Script) *handler { return &handler{script: script} }

func (h *handler) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reqs)
}

func (h *handler) requests() []ChatRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ChatRequest(nil), h.reqs...)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" && r.URL.Path != "/chat/completions" {
		writeError(w, http.StatusNotFound, "unknown path "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "use POST")
		return
	}
	req, err := decodeRequest(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	h.mu.Lock()
	n := len(h.reqs) + 1
	h.reqs = append(h.reqs, req)
	h.mu.Unlock()

	reply := h.script(req)
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeError(w, reply.Status, reply.Content)
		return
	}
	id := fmt.Sprintf("chatcmpl-llmtest-%d", n)
	usage := usage{Prompt: promptTokens(req.Messages), Completion: CountTokens(reply.Content)}
	usage.Total = usage.Prompt + usage.Completion
	if req.Stream {
		writeStream(w, r, id, req, reply, usage)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      id,
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   req.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": reply.Content},
			"finish_reason": "stop",
		}},
		"usage":              usage,
		"system_fingerprint": "llmtest",
	})
}

type usage struct {
	Prompt     int `json:"prompt_tokens"`
	Completion int `json:"completion_tokens"`
	Total      int `json:"total_tokens"`
}

// wireRequest is the subset of the request body the server reads.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

func decodeRequest(r *http.Request) (ChatRequest, error) {
	var w wireRequest
	if err := json.NewDecoder(r.Body).Decode(&w); err != nil {
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
	}
	if w.StreamOptions != nil {
		req.IncludeUsage = w.StreamOptions.IncludeUsage
	}
	for i, m := range w.Messages {
		text, err := messageText(m.Content)
		if err != nil {
			return ChatRequest{}, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		req.Messages = append(req.Messages, Message{Role: m.Role, Content: text})
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
	send(chunk(map[string]any{}, "stop"))
	if req.IncludeUsage {
		send(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"system_fingerprint": "llmtest", "choices": []any{}, "usage": u,
		})
	}
	event([]byte("[DONE]"))
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
