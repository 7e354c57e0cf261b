package llmtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TimedCall is one request a TimedServer received.
type TimedCall struct {
	// Prompt identifies the request's messages: the same prompt of the
	// same task and turn gives the same key.
	Prompt string
	// Task is the number the server's task pattern found in the request;
	// 0 if none.
	Task int
	// Body is the request as the client sent it.
	Body       []byte
	Start, End time.Time
	// Cut is set when the client went away before the answer was written.
	Cut bool
}

// Within reports whether the call started and ended between from and to.
func (c TimedCall) Within(from, to time.Time) bool {
	return c.Start.After(from) && c.End.Before(to)
}

// TimedServer serves a script over the chat completions protocol and
// records when each call started and ended, so tests that kill workers can
// tell a prompt asked again from a new one, and which calls a kill cut.
type TimedServer struct {
	srv  *httptest.Server
	task *regexp.Regexp

	mu    sync.Mutex
	calls []TimedCall
	added chan struct{} // closed and replaced when a call starts
}

// NewTimed serves script until the test ends, on ln, or on a free port of
// 127.0.0.1 when ln is nil (a worker in a container needs an address it
// can reach, such as the Docker bridge's). task, when set, finds a call's
// task number in its body: the first submatch.
func NewTimed(t testing.TB, ln net.Listener, task *regexp.Regexp, script Script) *TimedServer {
	t.Helper()
	s := &TimedServer{task: task, added: make(chan struct{})}
	inner := Handler(script)
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		i := s.add(body)
		inner.ServeHTTP(w, r)
		s.mu.Lock()
		s.calls[i].End, s.calls[i].Cut = time.Now(), r.Context().Err() != nil
		s.mu.Unlock()
	}))
	if ln != nil {
		_ = s.srv.Listener.Close()
		s.srv.Listener = ln
	}
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

// add records a call that starts now and returns its index.
func (s *TimedServer) add(body []byte) int {
	call := TimedCall{Prompt: promptKey(body), Body: body}
	if s.task != nil {
		if n := s.task.FindSubmatch(body); n != nil {
			call.Task, _ = strconv.Atoi(string(n[1]))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	call.Start = time.Now()
	s.calls = append(s.calls, call)
	close(s.added)
	s.added = make(chan struct{})
	return len(s.calls) - 1
}

// URL is the base URL to point a client at (OPENAI_BASE_URL); it ends in
// /v1.
func (s *TimedServer) URL() string { return s.srv.URL + "/v1" }

// Calls returns the calls so far, in the order they started.
func (s *TimedServer) Calls() []TimedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Await waits until a call that match accepts has started and returns it.
func (s *TimedServer) Await(ctx context.Context, match func(TimedCall) bool) (TimedCall, error) {
	seen := 0
	for {
		s.mu.Lock()
		for _, c := range s.calls[seen:] {
			if match(c) {
				s.mu.Unlock()
				return c, nil
			}
		}
		seen = len(s.calls)
		added := s.added
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return TimedCall{}, context.Cause(ctx)
		case <-added:
		}
	}
}

// promptKey identifies a request by its messages.
func promptKey(body []byte) string {
	var req struct {
		Messages json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &req) // a body that does not decode keys as empty
	sum := sha256.Sum256(req.Messages)
	return hex.EncodeToString(sum[:8])
}
