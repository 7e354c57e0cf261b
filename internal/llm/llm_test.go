package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// newOpenAI builds a model on the real langchaingo OpenAI client pointed at
// a scripted server.
func newOpenAI(t *testing.T, script llmtest.Script) (llm.Model, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(t, script)
	m, err := llm.New(llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1-mini"},
		llm.Env{OpenAIKey: "sk-test", OpenAIBaseURL: srv.URL()})
	if err != nil {
		t.Fatalf("new model: %v", err)
	}
	return m, srv
}

const (
	system = "You write Python."                 // 17 bytes: 5 tokens
	prompt = "Write hello.py that prints hello." // 33 bytes: 9 tokens
	answer = "```python path=hello.py\nprint(\"hello\")\n```\n"
)

// wantPrompt is llmtest's count for the system and user messages above:
// 3 priming + (3+5) + (3+9).
const wantPrompt = 23

func TestCompleteOpenAI(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			m, srv := newOpenAI(t, llmtest.Text(answer))
			req := llm.Request{System: system, Prompt: prompt, MaxTokens: 500}
			var chunks []string
			if streaming {
				req.OnChunk = func(c string) { chunks = append(chunks, c) }
			}
			resp, err := m.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("complete: %v", err)
			}
			if resp.Text != answer {
				t.Errorf("text = %q, want %q", resp.Text, answer)
			}
			if resp.PromptTokens != wantPrompt || resp.CompletionTokens != llmtest.CountTokens(answer) {
				t.Errorf("usage = %d/%d, want %d/%d", resp.PromptTokens, resp.CompletionTokens,
					wantPrompt, llmtest.CountTokens(answer))
			}
			if streaming {
				if len(chunks) < 2 || strings.Join(chunks, "") != answer {
					t.Errorf("chunks = %q, want several joining to the answer", chunks)
				}
			} else if len(chunks) != 0 {
				t.Errorf("non-streaming call produced chunks %q", chunks)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("server saw %d requests, want 1", len(reqs))
			}
			got := reqs[0]
			if got.Model != "gpt-4.1-mini" || got.APIKey != "sk-test" || got.MaxTokens != 500 {
				t.Errorf("request model/key/max = %q/%q/%d", got.Model, got.APIKey, got.MaxTokens)
			}
			if got.System() != system || got.LastUser() != prompt || len(got.Messages) != 2 {
				t.Errorf("messages = %+v", got.Messages)
			}
			if got.Stream != streaming || got.IncludeUsage != streaming {
				t.Errorf("stream/include_usage = %v/%v, want %v", got.Stream, got.IncludeUsage, streaming)
			}
		})
	}
}

func TestCompleteClassifiesErrors(t *testing.T) {
	tests := []struct {
		name       string
		reply      llmtest.Reply
		kind       llm.ErrorKind
		retryable  bool
		retryAfter time.Duration
		inMessage  string
	}{
		{"unauthorized", llmtest.Reply{Status: 401}, llm.KindAuth, false, 0, "rejected the API key (HTTP 401): set OPENAI_API_KEY"},
		{"forbidden", llmtest.Reply{Status: 403}, llm.KindAuth, false, 0, "HTTP 403"},
		{"bad request", llmtest.Reply{Status: 400, Content: "max_tokens is too large"}, llm.KindInvalidRequest, false, 0, "max_tokens is too large"},
		{"unknown model", llmtest.Reply{Status: 404}, llm.KindInvalidRequest, false, 0, `does not serve model "gpt-4.1-mini"`},
		{"unprocessable", llmtest.Reply{Status: 422}, llm.KindInvalidRequest, false, 0, "HTTP 422"},
		{"rate limited", llmtest.Reply{Status: 429, RetryAfter: "3"}, llm.KindRateLimited, true, 3 * time.Second, "retry after 3s"},
		{"rate limited no hint", llmtest.Reply{Status: 429}, llm.KindRateLimited, true, 0, "did not say"},
		{"server error", llmtest.Reply{Status: 500}, llm.KindTransient, true, 0, "HTTP 500"},
		{"overloaded", llmtest.Reply{Status: 503}, llm.KindTransient, true, 0, "HTTP 503"},
		{"empty answer", llmtest.Reply{}, llm.KindTransient, true, 0, "empty response"},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", tt.name, streaming), func(t *testing.T) {
				m, srv := newOpenAI(t, llmtest.Fixed(tt.reply))
				req := llm.Request{Prompt: prompt}
				if streaming {
					req.Stream = true
				}
				_, err := m.Complete(context.Background(), req)
				var e *llm.Error
				if !errors.As(err, &e) {
					t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
				}
				if e.Kind != tt.kind || e.Retryable() != tt.retryable || e.RetryAfter != tt.retryAfter {
					t.Errorf("kind/retryable/retryAfter = %v/%v/%v, want %v/%v/%v",
						e.Kind, e.Retryable(), e.RetryAfter, tt.kind, tt.retryable, tt.retryAfter)
				}
				if tt.reply.Status != 0 && e.Status != tt.reply.Status {
					t.Errorf("status = %d, want %d", e.Status, tt.reply.Status)
				}
				if !strings.Contains(err.Error(), tt.inMessage) {
					t.Errorf("message %q lacks %q", err, tt.inMessage)
				}
				if n := srv.Calls(); n != 1 {
					t.Errorf("provider called %d times, want exactly 1: retries belong to Temporal", n)
				}
			})
		}
	}
}

func TestCompleteUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	m, err := llm.New(llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{OpenAIBaseURL: "http://" + addr + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), llm.Request{Prompt: prompt})
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindTransient {
		t.Fatalf("error = %v, want a transient *llm.Error", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("error %q should say it cannot reach the server and wrap the *net.OpError", err)
	}
}

func TestCompleteDeadline(t *testing.T) {
	m, _ := newOpenAI(t, llmtest.Fixed(llmtest.Reply{Content: "late", Delay: 5 * time.Second}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Complete(ctx, llm.Request{Prompt: prompt})
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.KindTransient || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error = %v, want transient wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("call took %v after its deadline", d)
	}
}

// Concurrent calls on one Model must each see their own HTTP outcome.
func TestCompleteConcurrentCallsKeepTheirOwnOutcome(t *testing.T) {
	m, srv := newOpenAI(t, llmtest.Rules(
		llmtest.Rule{Contains: "limit", Reply: llmtest.Reply{Status: 429, RetryAfter: "7", Delay: 20 * time.Millisecond}},
		llmtest.Rule{Contains: "", Reply: llmtest.Reply{Content: "ok", Delay: 10 * time.Millisecond}},
	))
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := "please answer"
			if i%2 == 0 {
				p = "please limit"
			}
			req := llm.Request{Prompt: p}
			req.Stream = i%4 < 2
			_, errs[i] = m.Complete(context.Background(), req)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		var e *llm.Error
		switch {
		case i%2 == 1 && err != nil:
			t.Errorf("call %d: %v", i, err)
		case i%2 == 0 && (!errors.As(err, &e) || e.Kind != llm.KindRateLimited || e.RetryAfter != 7*time.Second):
			t.Errorf("call %d: error %v, want rate limited after 7s", i, err)
		}
	}
	if srv.Calls() != n {
		t.Errorf("calls = %d, want %d", srv.Calls(), n)
	}
}

// The Anthropic and Ollama clients report usage under other keys; check
// the mapping against their wire formats.
func TestCompleteOtherProviders(t *testing.T) {
	anthropicSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != "good" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",`+
			`"content":[{"type":"text","text":"hi there"}],"stop_reason":"end_turn",`+
			`"usage":{"input_tokens":12,"output_tokens":3}}`)
	}))
	defer anthropicSrv.Close()
	ollamaSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/chat" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `{"model":"qwen2.5-coder","message":{"role":"assistant","content":"hello"},`+
			`"done":true,"prompt_eval_count":7,"eval_count":2}`+"\n")
	}))
	defer ollamaSrv.Close()

	tests := []struct {
		name     string
		spec     llm.Spec
		env      llm.Env
		text     string
		in, out  int
		wantKind llm.ErrorKind
		wantErr  string
	}{
		{"anthropic", llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "good", AnthropicBaseURL: anthropicSrv.URL + "/v1"}, "hi there", 12, 3, 0, ""},
		{"anthropic bad key", llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{AnthropicKey: "bad", AnthropicBaseURL: anthropicSrv.URL + "/v1"}, "", 0, 0, llm.KindAuth, "set ANTHROPIC_API_KEY"},
		{"ollama", llm.Spec{Provider: llm.ProviderOllama}, llm.Env{OllamaHost: ollamaSrv.URL}, "hello", 7, 2, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := llm.New(tt.spec, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Complete(context.Background(), llm.Request{System: system, Prompt: prompt})
			if tt.wantErr != "" {
				var e *llm.Error
				if !errors.As(err, &e) || e.Kind != tt.wantKind || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want kind %v mentioning %q", err, tt.wantKind, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != tt.text || resp.PromptTokens != tt.in || resp.CompletionTokens != tt.out {
				t.Errorf("response = %+v, want %q %d/%d", resp, tt.text, tt.in, tt.out)
			}
		})
	}
}

func TestNewRequiresCredentials(t *testing.T) {
	tests := []struct {
		spec llm.Spec
		env  llm.Env
		want string
	}{
		{llm.Spec{Provider: llm.ProviderOpenAI}, llm.Env{AnthropicKey: "x"}, "OPENAI_API_KEY"},
		{llm.Spec{Provider: llm.ProviderAnthropic}, llm.Env{OpenAIKey: "x"}, "ANTHROPIC_API_KEY"},
	}
	for _, tt := range tests {
		_, err := llm.New(tt.spec, tt.env)
		if !errors.Is(err, llm.ErrMissingKey) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%v) error = %v, want ErrMissingKey naming %s", tt.spec, err, tt.want)
		}
	}
	if _, err := llm.New(llm.Spec{Provider: "mistral"}, llm.Env{}); !errors.Is(err, llm.ErrBadSpec) {
		t.Errorf("unknown provider error = %v, want ErrBadSpec", err)
	}
	if _, err := llm.New(llm.Spec{Provider: llm.ProviderOllama}, llm.Env{OllamaHost: "ftp://x"}); !errors.Is(err, llm.ErrBadSpec) {
		t.Errorf("bad OLLAMA_HOST error = %v, want ErrBadSpec", err)
	}
}
