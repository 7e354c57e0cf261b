package llmtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
)

// long is text of n tokens by the servers' count.
func long(n int) string { return strings.Repeat("abcd", n) }

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// OpenAI caches on its own: a prompt of 1024 tokens or more is remembered,
// and a later prompt starting with the same tools and messages reports its
// longest prefix seen before, from 1024 tokens up in steps of 128.
func TestOpenAICachesLongPrefixes(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("ok"))
	system := `{"role":"system","content":` + jsonString(long(1200)) + `}`
	user := func(text string) string { return `{"role":"user","content":` + jsonString(text) + `}` }
	ask := func(msgs ...string) (prompt, cached int) {
		t.Helper()
		resp := postJSON(t, srv.URL()+"/chat/completions", nil, `{"model":"m","messages":[`+strings.Join(msgs, ",")+`]}`)
		var got struct {
			Usage struct {
				Prompt  int `json:"prompt_tokens"`
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d, %v", resp.StatusCode, err)
		}
		return got.Usage.Prompt, got.Usage.Details.Cached
	}
	if p, c := ask(system, user("first")); c != 0 || p != 3+3+1200+3+2 {
		t.Errorf("first request: prompt %d, cached %d; want 1211, 0", p, c)
	}
	// The prefix seen: 3 priming + the system message (1203) + the first
	// user message (5) = 1211 tokens, cached as 1024 + 128.
	if p, c := ask(system, user("first"), user("second")); c != 1152 || p != 1211+5 {
		t.Errorf("same prefix: prompt %d, cached %d; want 1216, 1152", p, c)
	}
	if _, c := ask(`{"role":"system","content":`+jsonString("x"+long(1200))+`}`, user("first")); c != 0 {
		t.Errorf("a changed first message: cached %d, want 0", c)
	}
	if _, c := ask(user("short"), user("short")); c != 0 {
		t.Errorf("a short prompt seen before: cached %d, want 0", c)
	}
	if _, c := ask(user("short"), user("short")); c != 0 {
		t.Errorf("a short prompt seen twice: cached %d, want 0", c)
	}
}

// Anthropic caches at the request's breakpoints: the prompt up to a marked
// block is written; a later request reads back the longest prefix written
// before, and only input after its last breakpoint is billed as fresh.
func TestAnthropicCachesAtBreakpoints(t *testing.T) {
	srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
	header := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	mark := `,"cache_control":{"type":"ephemeral"}`
	block := func(text string, marked bool) string {
		b := `{"type":"text","text":` + jsonString(text)
		if marked {
			b += mark
		}
		return b + "}"
	}
	msg := func(role string, blocks ...string) string {
		return `{"role":"` + role + `","content":[` + strings.Join(blocks, ",") + `]}`
	}
	type usage struct {
		In    int `json:"input_tokens"`
		Read  int `json:"cache_read_input_tokens"`
		Write int `json:"cache_creation_input_tokens"`
	}
	ask := func(system string, msgs ...string) (usage, int) {
		t.Helper()
		resp := postJSON(t, srv.URL()+"/messages", header, `{"model":"m","max_tokens":10,"system":[`+system+`],"messages":[`+strings.Join(msgs, ",")+`]}`)
		var got struct {
			Usage usage
			Error struct{ Message string }
		}
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Logf("refused: %s", got.Error.Message)
		}
		return got.Usage, resp.StatusCode
	}
	system := block(long(1100), true)              // 1100 tokens
	q1 := msg("user", block(long(200), true))      // 3 + 200
	a1 := msg("assistant", block(long(10), false)) // 3 + 10
	q2 := msg("user", block(long(300), true))      // 3 + 300

	if u, _ := ask(system, q1); u != (usage{In: 0, Read: 0, Write: 1303}) {
		t.Errorf("first request: %+v, want all 1303 tokens written", u)
	}
	// The first request's whole prompt is read back; what follows it up to
	// the last breakpoint is written.
	if u, _ := ask(system, q1, a1, q2); u != (usage{In: 0, Read: 1303, Write: 13 + 303}) {
		t.Errorf("next turn: %+v, want 1303 read, 316 written", u)
	}
	// Without breakpoints nothing is cached, even a prompt seen before.
	if u, _ := ask(block(long(1100), false), msg("user", block(long(200), false))); u != (usage{In: 1303}) {
		t.Errorf("no breakpoints: %+v, want 1303 fresh", u)
	}
	// A breakpoint moved is the same prompt: the blocks without their
	// marks still match what was written, here the whole prompt.
	if u, _ := ask(system, msg("user", block(long(200), false)), a1, q2); u != (usage{Read: 1619}) {
		t.Errorf("breakpoint moved: %+v, want all 1619 read", u)
	}
	// Under 1024 tokens, nothing is written.
	if u, _ := ask(block(long(100), true), msg("user", block("hi", true))); u != (usage{In: 100 + 4}) {
		t.Errorf("short prompt: %+v, want 104 fresh", u)
	}
	many := strings.Repeat(block("x", true)+",", 4) + block("x", true)
	if _, status := ask(system, msg("user", many)); status != http.StatusBadRequest {
		t.Errorf("six breakpoints: status %d, want 400", status)
	}
	if reqs := srv.Requests(); reqs[1].CacheReadTokens != 1303 || reqs[1].Breakpoints != 3 || !strings.Contains(string(reqs[1].Body), mark) {
		t.Errorf("recorded request: read %d, breakpoints %d", reqs[1].CacheReadTokens, reqs[1].Breakpoints)
	}
}
