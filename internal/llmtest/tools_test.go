package llmtest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llmtest"
)

var calls = []llmtest.ToolCall{
	{ID: "call_1", Name: "read_file", Arguments: `{"path":"a/very/long/path/to/file.go"}`},
	{ID: "call_2", Name: "search", Arguments: `{"pattern":"func [A-Z]\\w+\\("}`},
}

type event struct {
	name string
	data map[string]any
}

// readEvents reads a stream of server-sent events, checking that an
// event's name, when given, matches its data's type.
func readEvents(t *testing.T, r io.Reader) []event {
	t.Helper()
	var out []event
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case line == "data: [DONE]":
			out = append(out, event{name: "[DONE]"})
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
			if name != "" && data["type"] != name {
				t.Errorf("event %q carries type %v", name, data["type"])
			}
			out = append(out, event{name: name, data: data})
			name = ""
		default:
			t.Fatalf("stray line %q", line)
		}
	}
	return out
}

func postJSON(t *testing.T, url string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const toolsBody = `{"model":"m","stream":true,"stream_options":{"include_usage":true},` +
	`"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}],` +
	`"messages":[{"role":"user","content":"go"}]}`

// Streamed tool calls arrive as OpenAI sends them: a first delta with the
// call's index, id, type and name, then argument pieces carrying only the
// index, whether the calls follow each other or interleave.
func TestOpenAIStreamsToolCalls(t *testing.T) {
	for _, interleave := range []bool{false, true} {
		t.Run(fmt.Sprintf("interleave=%v", interleave), func(t *testing.T) {
			srv := llmtest.New(t, llmtest.Fixed(llmtest.Reply{Content: "Looking.", ToolCalls: calls, InterleaveToolCalls: interleave}))
			events := readEvents(t, postJSON(t, srv.URL()+"/chat/completions", nil, toolsBody).Body)
			args := map[int]string{}
			var order []int
			finish := ""
			for _, ev := range events {
				for _, ch := range asList(ev.data["choices"]) {
					ch := ch.(map[string]any)
					if f, ok := ch["finish_reason"].(string); ok {
						finish = f
					}
					delta, _ := ch["delta"].(map[string]any)
					for _, d := range asList(delta["tool_calls"]) {
						d := d.(map[string]any)
						idx, ok := d["index"].(float64)
						if !ok {
							t.Fatalf("tool-call delta without index: %v", d)
						}
						i := int(idx)
						fn := d["function"].(map[string]any)
						if _, started := args[i]; !started {
							if d["id"] != calls[i].ID || d["type"] != "function" || fn["name"] != calls[i].Name {
								t.Errorf("first delta of call %d = %v", i, d)
							}
						} else if d["id"] != nil || fn["name"] != nil {
							t.Errorf("later delta of call %d repeats id or name: %v", i, d)
						}
						args[i] += fn["arguments"].(string)
						order = append(order, i)
					}
				}
			}
			for i, c := range calls {
				if args[i] != c.Arguments {
					t.Errorf("call %d arguments = %q, want %q", i, args[i], c.Arguments)
				}
			}
			sequential := true
			for k := 1; k < len(order); k++ {
				sequential = sequential && order[k] >= order[k-1]
			}
			if sequential == interleave {
				t.Errorf("delta order %v", order)
			}
			if finish != "tool_calls" || events[len(events)-1].name != "[DONE]" || events[len(events)-2].data["usage"] == nil {
				t.Errorf("finish %q, last events %v", finish, events[len(events)-2:])
			}
			if tools := srv.Requests()[0].Tools; len(tools) != 1 || tools[0].Name != "read_file" {
				t.Errorf("tools decoded = %+v", tools)
			}
		})
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// Like the real services, the servers refuse tool calls and results that
// do not pair up, before the script is asked.
func TestUnpairedToolCallsAreRefused(t *testing.T) {
	asked := false
	script := func() llmtest.Reply { asked = true; return llmtest.Reply{Content: "no"} }
	oa := llmtest.New(t, func(llmtest.ChatRequest) llmtest.Reply { return script() })
	an := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return script() })
	anHeader := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	const (
		oaCall = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
		anUse  = `{"role":"assistant","content":[{"type":"text","text":"hm"},{"type":"tool_use","id":"c1","name":"f","input":{}}]}`
	)
	tests := []struct {
		name, url, body, want string
		header                map[string]string
	}{
		{"openai call unanswered", oa.URL() + "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"},` + oaCall + `,{"role":"user","content":"and?"}]}`, "did not have response messages: c1", nil},
		{"openai stray result", oa.URL() + "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`, "must be a response to a preceding message", nil},
		{"anthropic call unanswered", an.URL() + "/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"},` + anUse + `,{"role":"user","content":"and?"}]}`, "ids were found without `tool_result` blocks", anHeader},
		{"anthropic stray result", an.URL() + "/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"},` + anUse + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"x"},{"type":"tool_result","tool_use_id":"c2","content":"y"}]}]}`, "unexpected `tool_use_id` found in `tool_result` blocks: c2", anHeader},
		{"openai call answered twice", oa.URL() + "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"go"},` + oaCall + `,{"role":"tool","tool_call_id":"c1","content":"x"},{"role":"tool","tool_call_id":"c1","content":"y"}]}`, "must be a response to a preceding message", nil},
		{"anthropic call answered twice", an.URL() + "/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"},` + anUse + `,{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"x"},{"type":"tool_result","tool_use_id":"c1","content":"y"}]}]}`, "unexpected `tool_use_id` found in `tool_result` blocks: c1", anHeader},
		{"anthropic tool_use ids repeated", an.URL() + "/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"f","input":{}},{"type":"tool_use","id":"c1","name":"g","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"x"}]}]}`, "`tool_use` ids must be unique", anHeader},
		{"anthropic without key", an.URL() + "/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"go"}]}`, "authentication_error", map[string]string{"anthropic-version": "2023-06-01"}},
		{"anthropic without max_tokens", an.URL() + "/messages", `{"model":"m","messages":[{"role":"user","content":"go"}]}`, "max_tokens", anHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = false
			resp := postJSON(t, tt.url, tt.header, tt.body)
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode/100 != 4 || !strings.Contains(string(raw), tt.want) {
				t.Errorf("status %d, body %s; want a 4xx naming %q", resp.StatusCode, raw, tt.want)
			}
			if asked {
				t.Error("the script was asked")
			}
		})
	}
}

// A streamed Anthropic turn with text and two tool calls comes as the
// messages API sends it: one start, delta(s) and stop per block, input
// JSON in partial pieces, then the stop reason and output tokens.
func TestAnthropicStreamsToolUse(t *testing.T) {
	srv := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply {
		return llmtest.Reply{Content: "Let me look.", ToolCalls: calls}
	})
	body := `{"model":"m","max_tokens":100,"stream":true,"system":[{"type":"text","text":"be brief"}],` +
		`"tools":[{"name":"read_file","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"go"}]}`
	events := readEvents(t, postJSON(t, srv.URL()+"/messages", map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}, body).Body)
	var names []string
	text, inputs := "", map[int]string{}
	for _, ev := range events {
		if len(names) == 0 || names[len(names)-1] != ev.name {
			names = append(names, ev.name)
		}
		i := 0
		if idx, ok := ev.data["index"].(float64); ok {
			i = int(idx)
		}
		delta, _ := ev.data["delta"].(map[string]any)
		switch {
		case ev.name == "content_block_start" && i > 0:
			cb := ev.data["content_block"].(map[string]any)
			if cb["type"] != "tool_use" || cb["id"] != calls[i-1].ID || cb["name"] != calls[i-1].Name {
				t.Errorf("block %d start = %v", i, cb)
			}
		case delta["type"] == "text_delta":
			text += delta["text"].(string)
		case delta["type"] == "input_json_delta":
			inputs[i] += delta["partial_json"].(string)
		case ev.name == "message_delta":
			if delta["stop_reason"] != "tool_use" || ev.data["usage"].(map[string]any)["output_tokens"].(float64) <= 0 {
				t.Errorf("message_delta = %v", ev.data)
			}
		}
	}
	want := "message_start ping " + strings.Repeat("content_block_start content_block_delta content_block_stop ", 3) + "message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	if text != "Let me look." || inputs[1] != calls[0].Arguments || inputs[2] != calls[1].Arguments {
		t.Errorf("text %q, inputs %v", text, inputs)
	}
	if r := srv.Requests()[0]; r.System != "be brief" || r.LastUser() != "go" || r.APIKey != "k" || len(r.Tools) != 1 {
		t.Errorf("decoded request = %+v", r)
	}
}

// Steps answers each request with its own step, in order, and fails
// loudly past the last; Fail answers 400 with the reason.
func TestSteps(t *testing.T) {
	s := llmtest.Steps(
		func(r llmtest.ChatRequest) llmtest.Reply { return llmtest.Reply{Content: "one " + r.LastUser()} },
		func(r llmtest.ChatRequest) llmtest.Reply { return llmtest.Fail("wanted %d results", 2) },
	)
	req := llmtest.ChatRequest{Messages: []llmtest.Message{{Role: "user", Content: "hi"}}}
	got := []llmtest.Reply{s(req), s(req), s(req)}
	want := []llmtest.Reply{{Content: "one hi"}, {Status: 400, Content: "llmtest: wanted 2 results"},
		{Status: 500, Content: "llmtest: all 2 steps taken"}}
	for i := range want {
		if got[i].Status != want[i].Status || got[i].Content != want[i].Content {
			t.Errorf("request %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
}
