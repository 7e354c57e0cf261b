package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// OllamaServer is a scripted Ollama: its own chat API at /api/chat, which
// plain completions use, and the OpenAI-compatible one under /v1, which
// tool turns use. One script answers both.
type OllamaServer struct {
	srv *httptest.Server
	rec recorder[ChatRequest]
}

// NewOllama starts a scripted Ollama, closed when the test ends.
func NewOllama(t testing.TB, script Script) *OllamaServer {
	t.Helper()
	s := &OllamaServer{}
	recorded := func(req ChatRequest) Reply {
		s.rec.add(req)
		return script(req)
	}
	native := &protocolHandler[ChatRequest]{script: recorded, proto: protocol[ChatRequest]{
		path: "/api/chat", decode: decodeOllamaChat, fail: writeOllamaError, answer: answerOllamaChat,
		check: func(ChatRequest) string { return "" },
	}}
	mux := http.NewServeMux()
	mux.Handle("/api/chat", native)
	mux.Handle("/v1/chat/completions", newHandler(recorded))
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the server's address as OLLAMA_HOST takes it: no path.
func (s *OllamaServer) URL() string { return s.srv.URL }

// Requests returns the requests the script answered, from either API,
// oldest first.
func (s *OllamaServer) Requests() []ChatRequest { return s.rec.all() }

type ollamaWire struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Stream  *bool `json:"stream"`
	Options struct {
		NumPredict int `json:"num_predict"`
	} `json:"options"`
}

func decodeOllamaChat(r *http.Request) (ChatRequest, error) {
	var w ollamaWire
	if err := json.NewDecoder(r.Body).Decode(&w); err != nil {
		return ChatRequest{}, fmt.Errorf("decode request body: %w", err)
	}
	if w.Model == "" {
		return ChatRequest{}, errors.New("model is required")
	}
	// Ollama streams unless told not to.
	req := ChatRequest{Model: w.Model, Stream: w.Stream == nil || *w.Stream, MaxTokens: w.Options.NumPredict}
	for _, m := range w.Messages {
		req.Messages = append(req.Messages, Message{Role: m.Role, Content: m.Content})
	}
	return req, nil
}

// answerOllamaChat answers as Ollama does: newline-delimited JSON objects,
// the last one done and carrying the token counts; one object unstreamed.
func answerOllamaChat(w http.ResponseWriter, _ *http.Request, _ int, req ChatRequest, reply Reply) {
	created := time.Now().UTC().Format(time.RFC3339Nano)
	final := map[string]any{
		"model": req.Model, "created_at": created, "done": true, "done_reason": "stop",
		"message":           map[string]any{"role": "assistant", "content": ""},
		"prompt_eval_count": promptTokens(req.Messages), "eval_count": CountTokens(reply.Content),
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w) // each Encode writes one line
	flusher, _ := w.(http.Flusher)
	if !req.Stream {
		final["message"] = map[string]any{"role": "assistant", "content": reply.Content}
		_ = enc.Encode(final)
		return
	}
	for _, piece := range splitChunks(reply.Content, chunkBytes) {
		_ = enc.Encode(map[string]any{"model": req.Model, "created_at": created, "done": false,
			"message": map[string]any{"role": "assistant", "content": piece}})
		if flusher != nil {
			flusher.Flush()
		}
	}
	_ = enc.Encode(final)
}

// writeOllamaError answers like Ollama does on failure: {"error": msg}.
func writeOllamaError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = http.StatusText(status)
	}
	writeJSON(w, status, map[string]any{"error": msg})
}
