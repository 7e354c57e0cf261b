package llmtest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const body = `{"model":"m1","messages":[{"role":"system","content":"be brief"},` +
	`{"role":"user","content":[{"type":"text","text":"say hi"}]}]%s}`

func TestJSONReply(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("hi there"))
	resp := post(t, srv.URL()+"/chat/completions", fmt.Sprintf(body, `,"max_completion_tokens":9`))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got struct {
		Object  string
		Model   string
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Total      int `json:"total_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || got.Model != "m1" || len(got.Choices) != 1 ||
		got.Choices[0].Message.Content != "hi there" || got.Choices[0].Message.Role != "assistant" ||
		got.Choices[0].FinishReason != "stop" {
		t.Errorf("reply = %+v", got)
	}
	// 3 priming + (3 + "be brief" 2) + (3 + "say hi" 2) = 13; "hi there" = 2.
	if got.Usage.Prompt != 13 || got.Usage.Completion != 2 || got.Usage.Total != 15 {
		t.Errorf("usage = %+v, want 13/2/15", got.Usage)
	}
	reqs := srv.Requests()
	if srv.Calls() != 1 || len(reqs) != 1 {
		t.Fatalf("calls = %d, requests = %d", srv.Calls(), len(reqs))
	}
	r := reqs[0]
	if r.Model != "m1" || r.APIKey != "sk-abc" || r.MaxTokens != 9 || r.System() != "be brief" || r.LastUser() != "say hi" || r.Stream {
		t.Errorf("decoded request = %+v", r)
	}
}

// sseEvents reads a whole event stream into its data payloads.
func sseEvents(t *testing.T, r io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("stray line %q", line)
		}
		events = append(events, data)
	}
	return events
}

func TestStreamReply(t *testing.T) {
	const answer = "def main():\n    print('héllo wörld, from a streamed answer')\n"
	for _, includeUsage := range []bool{false, true} {
		t.Run(fmt.Sprintf("include_usage=%v", includeUsage), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Text(answer))
			extra := `,"stream":true`
			if includeUsage {
				extra += `,"stream_options":{"include_usage":true}`
			}
			resp := post(t, srv.URL()+"/chat/completions", fmt.Sprintf(body, extra))
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content type %q", ct)
			}
			events := sseEvents(t, resp.Body)
			if len(events) == 0 || events[len(events)-1] != "[DONE]" {
				t.Fatalf("stream does not end with [DONE]: %q", events)
			}
			var text strings.Builder
			var usageChunks, finish int
			for _, ev := range events[:len(events)-1] {
				var c struct {
					Object  string
					Choices []struct {
						Delta        struct{ Content string }
						FinishReason *string `json:"finish_reason"`
					}
					Usage *struct {
						Prompt     int `json:"prompt_tokens"`
						Completion int `json:"completion_tokens"`
					}
				}
				if err := json.Unmarshal([]byte(ev), &c); err != nil {
					t.Fatalf("event %q: %v", ev, err)
				}
				if c.Object != "chat.completion.chunk" {
					t.Errorf("object = %q", c.Object)
				}
				if c.Usage != nil {
					usageChunks++
					if len(c.Choices) != 0 || c.Usage.Completion != llmtest.CountTokens(answer) || c.Usage.Prompt != 13 {
						t.Errorf("usage chunk %q", ev)
					}
				}
				for _, ch := range c.Choices {
					text.WriteString(ch.Delta.Content)
					if ch.FinishReason != nil {
						finish++
					}
				}
			}
			if text.String() != answer {
				t.Errorf("streamed text = %q", text.String())
			}
			if want := map[bool]int{false: 0, true: 1}[includeUsage]; usageChunks != want {
				t.Errorf("usage chunks = %d, want %d", usageChunks, want)
			}
			if finish != 1 || len(events) < 5 {
				t.Errorf("finish reasons = %d, events = %d", finish, len(events))
			}
		})
	}
}

func TestErrorReplies(t *testing.T) {
	tests := []struct {
		name       string
		path, body string
		method     string
		reply      llmtest.Reply
		status     int
		retryAfter string
		inMessage  string
	}{
		{"rate limited", "/v1/chat/completions", fmt.Sprintf(body, ""), http.MethodPost, llmtest.Reply{Status: 429, RetryAfter: "3"}, 429, "3", "Rate limit"},
		{"unauthorized", "/v1/chat/completions", fmt.Sprintf(body, ""), http.MethodPost, llmtest.Reply{Status: 401}, 401, "", "API key"},
		{"custom message", "/v1/chat/completions", fmt.Sprintf(body, ""), http.MethodPost, llmtest.Reply{Status: 500, Content: "boom"}, 500, "", "boom"},
		{"unknown path", "/v1/embeddings", fmt.Sprintf(body, ""), http.MethodPost, llmtest.Reply{}, 404, "", "unknown path"},
		{"wrong method", "/v1/chat/completions", "", http.MethodGet, llmtest.Reply{}, 405, "", "POST"},
		{"bad json", "/v1/chat/completions", "{", http.MethodPost, llmtest.Reply{}, 400, "", "decode"},
		{"no messages", "/v1/chat/completions", `{"model":"m","messages":[]}`, http.MethodPost, llmtest.Reply{}, 400, "", "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(llmtest.Handler(llmtest.Fixed(tt.reply)))
			defer srv.Close()
			req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Message, Type string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || resp.Header.Get("Retry-After") != tt.retryAfter ||
				!strings.Contains(e.Error.Message, tt.inMessage) || e.Error.Type == "" {
				t.Errorf("got %d retry-after %q error %+v", resp.StatusCode, resp.Header.Get("Retry-After"), e.Error)
			}
		})
	}
}

func TestScripts(t *testing.T) {
	req := func(user string) llmtest.ChatRequest {
		return llmtest.ChatRequest{Messages: []llmtest.Message{{Role: "user", Content: "old"}, {Role: "assistant", Content: "x"}, {Role: "user", Content: user}}}
	}
	rules := llmtest.Rules(
		llmtest.Rule{Contains: "plan", Reply: llmtest.Reply{Content: "1. do it"}},
		llmtest.Rule{Contains: "code", Reply: llmtest.Reply{Content: "```go path=a.go\n```"}},
	)
	seq := llmtest.Sequence(llmtest.Reply{Content: "a"}, llmtest.Reply{Content: "b"})
	fail := llmtest.FailFirst(2, llmtest.Reply{Status: 503}, llmtest.Text("ok"))
	tests := []struct {
		name   string
		script llmtest.Script
		user   string
		want   llmtest.Reply
	}{
		{"rule 1", rules, "make a plan", llmtest.Reply{Content: "1. do it"}},
		{"rule 2 on last user message", rules, "write code", llmtest.Reply{Content: "```go path=a.go\n```"}},
		{"no rule", rules, "old", llmtest.Reply{Status: 400, Content: `llmtest: no rule matches the last user message "old"`}},
		{"seq 1", seq, "", llmtest.Reply{Content: "a"}},
		{"seq 2", seq, "", llmtest.Reply{Content: "b"}},
		{"seq exhausted", seq, "", llmtest.Reply{Status: 500, Content: "llmtest: sequence of 2 replies exhausted"}},
		{"fail 1", fail, "", llmtest.Reply{Status: 503}},
		{"fail 2", fail, "", llmtest.Reply{Status: 503}},
		{"recovered", fail, "", llmtest.Reply{Content: "ok"}},
	}
	for _, tt := range tests {
		if got := tt.script(req(tt.user)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// Under concurrent calls a Sequence hands out each reply exactly once and
// the server records every request.
func TestConcurrentSequence(t *testing.T) {
	const n = 20
	replies := make([]llmtest.Reply, n)
	for i := range replies {
		replies[i] = llmtest.Reply{Content: fmt.Sprintf("r%02d", i)}
	}
	srv := llmtest.New(t, llmtest.Sequence(replies...))
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(srv.URL()+"/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(body, "")))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var r struct {
				Choices []struct{ Message struct{ Content string } }
			}
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Choices) != 1 {
				t.Errorf("decode: %v", err)
				return
			}
			got[i] = r.Choices[0].Message.Content
		}()
	}
	wg.Wait()
	sort.Strings(got)
	for i, g := range got {
		if want := fmt.Sprintf("r%02d", i); g != want {
			t.Fatalf("replies = %q, want each of r00..r%02d once", got, n-1)
		}
	}
	if srv.Calls() != n || len(srv.Requests()) != n {
		t.Errorf("calls = %d, requests = %d, want %d", srv.Calls(), len(srv.Requests()), n)
	}
}
