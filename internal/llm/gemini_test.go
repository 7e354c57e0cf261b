package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// gemini starts a scripted Gemini server and a model pointed at it.
func gemini(t *testing.T, script llmtest.GeminiScript) (*llmtest.GeminiServer, llm.Model) {
	t.Helper()
	srv := llmtest.NewGemini(t, script)
	return srv, mustNew(t, llm.Spec{Provider: llm.ProviderGemini, Model: "gemini-2.5-pro"}, llm.Env{GeminiKey: "gm-test", GeminiBaseURL: srv.URL()})
}

// geminiCallsBack checks what the last request sent back of the turn
// before: the model's text and calls (names and arguments, in order, no
// ids: the API has none), and after them one function response per call,
// in the calls' order, each holding the output of its own call.
func geminiCallsBack(r llmtest.GeminiRequest, text string, calls []llmtest.ToolCall, output func(i int, c llmtest.ToolCall) string) string {
	if len(r.Contents) < 2 {
		return fmt.Sprintf("%d contents, want the model's turn and the answers after it", len(r.Contents))
	}
	model, answers := r.Contents[len(r.Contents)-2], r.Contents[len(r.Contents)-1]
	var gotText string
	var gotCalls []llmtest.ToolCall
	for _, p := range model.Parts {
		gotText += p.Text
		if p.Call != nil {
			gotCalls = append(gotCalls, *p.Call)
		}
	}
	var want []llmtest.ToolCall
	for _, c := range calls {
		want = append(want, llmtest.ToolCall{Name: c.Name, Arguments: c.Arguments})
	}
	if model.Role != "model" || gotText != text || !reflect.DeepEqual(gotCalls, want) {
		return fmt.Sprintf("model turn sent back as %s %q %+v, want model %q %+v", model.Role, gotText, gotCalls, text, want)
	}
	var got, wantAnswers []llmtest.GeminiResponse
	for _, p := range answers.Parts {
		if p.Response != nil {
			got = append(got, *p.Response)
		}
	}
	for i, c := range calls {
		wantAnswers = append(wantAnswers, llmtest.GeminiResponse{Name: c.Name, Output: output(i, c)})
	}
	if !reflect.DeepEqual(got, wantAnswers) {
		return fmt.Sprintf("function responses = %+v, want %+v", got, wantAnswers)
	}
	return ""
}

func resultOf(_ int, c llmtest.ToolCall) string { return "result of " + c.Name }

// TestGeminiTurnRoundTrips drives the Gemini client through its protocol,
// streamed and not: a text-only turn, one call, and text with two calls
// whose results go back on the next turn. Calls arrive without ids and
// get ours, numbered by turn and place; results go back by name and order.
func TestGeminiTurnRoundTrips(t *testing.T) {
	const done = "Fixed: Add returned a-b."
	scenarios := []struct {
		name  string
		first llmtest.Reply
		stop  llm.StopReason
	}{
		{"text only", llmtest.Reply{Content: done}, llm.StopEnd},
		{"one tool call", llmtest.Reply{ToolCalls: twoCalls[:1]}, llm.StopToolUse},
		{"text and two tool calls", llmtest.Reply{Content: thinking, ToolCalls: twoCalls}, llm.StopToolUse},
	}
	for _, sc := range scenarios {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streaming=%v", sc.name, streaming), func(t *testing.T) {
				srv, m := gemini(t, llmtest.Steps(
					func(r llmtest.GeminiRequest) llmtest.Reply {
						var offered []string
						for _, tl := range r.Tools {
							offered = append(offered, tl.Name)
						}
						if r.System != turnSystem || r.LastUser() != turnUser || fmt.Sprint(offered) != "[read_file search]" || r.MaxTokens != 1000 {
							return llmtest.Fail("first request: system %q, user %q, tools %v, max %d", r.System, r.LastUser(), offered, r.MaxTokens)
						}
						return sc.first
					},
					func(r llmtest.GeminiRequest) llmtest.Reply {
						if msg := geminiCallsBack(r, sc.first.Content, sc.first.ToolCalls, resultOf); msg != "" {
							return llmtest.Fail("%s", msg)
						}
						return llmtest.Reply{Content: done}
					}))
				var chunks []string
				opts := llm.TurnOptions{MaxTokens: 1000}
				if streaming {
					opts.OnText = func(c string) { chunks = append(chunks, c) }
				}
				conv := firstConversation()
				res, err := m.Turn(context.Background(), conv, tools, opts)
				if err != nil {
					t.Fatalf("first turn: %v", err)
				}
				var want []llm.ToolCall
				for i, c := range sc.first.ToolCalls {
					want = append(want, llm.ToolCall{ID: fmt.Sprintf("gemini_0_%d", i), Name: c.Name, Arguments: c.Arguments})
				}
				inTokens := srv.Requests()[0].PromptTokens
				if res.Text != sc.first.Content || !reflect.DeepEqual(res.ToolCalls, want) || res.StopReason != sc.stop ||
					res.Usage != (llm.Usage{InputTokens: inTokens, OutputTokens: outputTokens(sc.first)}) || res.Model != "gemini:gemini-2.5-pro" {
					t.Errorf("first turn = %+v\nwant text %q, calls %+v, stop %s, %d in and %d out tokens", res, sc.first.Content, want, sc.stop, inTokens, outputTokens(sc.first))
				}
				if streaming && (strings.Join(chunks, "") != sc.first.Content || (len(sc.first.Content) > 16 && len(chunks) < 2)) {
					t.Errorf("streamed text in %d chunks = %q, want the answer's text %q in pieces", len(chunks), strings.Join(chunks, ""), sc.first.Content)
				}
				if !streaming && len(chunks) > 0 {
					t.Errorf("non-streaming turn streamed %q", chunks)
				}
				if srv.Requests()[0].Stream != streaming || srv.Requests()[0].APIKey != "gm-test" {
					t.Errorf("request streamed %v with key %q, want %v and the key", srv.Requests()[0].Stream, srv.Requests()[0].APIKey, streaming)
				}
				if len(res.ToolCalls) == 0 {
					return
				}
				answerCalls(&conv, res)
				res, err = m.Turn(context.Background(), conv, tools, opts)
				if err != nil {
					t.Fatalf("second turn: %v", err)
				}
				if res.Text != done || len(res.ToolCalls) != 0 || res.StopReason != llm.StopEnd || res.Usage.InputTokens <= inTokens {
					t.Errorf("second turn = %+v", res)
				}
			})
		}
	}
}

// TestGeminiKeepsParallelCallsWhole pins what the client must do with the
// calls of one turn, the faults that rule out langchaingo for the other
// providers: three calls, two of them to the same tool, come back whole
// and in order, with ids distinct from each other and from the turn
// before's; their results, appended in reverse order by the loop, go back
// in the calls' order, each with its own call's output, so two calls of
// one tool are never swapped.
func TestGeminiKeepsParallelCallsWhole(t *testing.T) {
	three := []llmtest.ToolCall{
		{Name: "read_file", Arguments: `{"path":"a.go"}`},
		{Name: "search", Arguments: `{"pattern":"Add"}`},
		{Name: "read_file", Arguments: `{"path":"b.go"}`},
	}
	output := func(_ int, c llmtest.ToolCall) string { return "output for " + c.Arguments }
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			_, m := gemini(t, llmtest.Steps(
				func(llmtest.GeminiRequest) llmtest.Reply { return llmtest.Reply{ToolCalls: three[:1]} },
				func(llmtest.GeminiRequest) llmtest.Reply { return llmtest.Reply{Content: thinking, ToolCalls: three} },
				func(r llmtest.GeminiRequest) llmtest.Reply {
					if msg := geminiCallsBack(r, thinking, three, output); msg != "" {
						return llmtest.Fail("%s", msg)
					}
					return llmtest.Reply{Content: "done"}
				}))
			conv := firstConversation()
			opts := llm.TurnOptions{Stream: streaming}
			answer := func(res llm.TurnResult) {
				conv.Append(res.Message())
				for i := len(res.ToolCalls) - 1; i >= 0; i-- {
					c := res.ToolCalls[i]
					conv.Append(llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: "output for " + c.Arguments}})
				}
			}
			first, err := m.Turn(context.Background(), conv, tools, opts)
			if err != nil {
				t.Fatalf("first turn: %v", err)
			}
			answer(first)
			res, err := m.Turn(context.Background(), conv, tools, opts)
			if err != nil {
				t.Fatalf("second turn: %v", err)
			}
			if len(res.ToolCalls) != len(three) {
				t.Fatalf("second turn read %d calls, want %d: %+v", len(res.ToolCalls), len(three), res.ToolCalls)
			}
			ids := map[string]bool{first.ToolCalls[0].ID: true}
			for i, c := range res.ToolCalls {
				if c.Name != three[i].Name || c.Arguments != three[i].Arguments || c.ID == "" || ids[c.ID] {
					t.Errorf("call %d = %+v, want %s %s under an id of its own", i, c, three[i].Name, three[i].Arguments)
				}
				ids[c.ID] = true
			}
			if screened := llm.ScreenCalls(res.ToolCalls, conv.Messages); !reflect.DeepEqual(screened, res.ToolCalls) {
				t.Errorf("the loop's screening changed the calls: %+v", screened)
			}
			answer(res)
			if res, err = m.Turn(context.Background(), conv, tools, opts); err != nil || res.Text != "done" {
				t.Errorf("third turn = %+v, %v", res, err)
			}
		})
	}
}

// TestGeminiComplete: a completion (a plan, a fenced answer) is a turn
// without tools, streamed or not, with the provider's token counts.
func TestGeminiComplete(t *testing.T) {
	const plan = "1. Read add.go.\n2. Fix Add."
	for _, streaming := range []bool{false, true} {
		srv, m := gemini(t, func(r llmtest.GeminiRequest) llmtest.Reply {
			if len(r.Tools) != 0 || r.System != "plan" || r.LastUser() != "fix Add" {
				return llmtest.Fail("request: tools %v, system %q, user %q", r.Tools, r.System, r.LastUser())
			}
			return llmtest.Reply{Content: plan}
		})
		var chunks []string
		req := llm.Request{System: "plan", Prompt: "fix Add"}
		if streaming {
			req.OnChunk = func(c string) { chunks = append(chunks, c) }
		}
		resp, err := m.Complete(context.Background(), req)
		if err != nil {
			t.Fatalf("streaming=%v: %v", streaming, err)
		}
		want := llm.Response{Text: plan, PromptTokens: srv.Requests()[0].PromptTokens, CompletionTokens: llmtest.CountTokens(plan), Model: "gemini:gemini-2.5-pro"}
		if resp != want || (streaming && strings.Join(chunks, "") != plan) || srv.Requests()[0].Stream != streaming {
			t.Errorf("streaming=%v: response %+v, chunks %q; want %+v", streaming, resp, chunks, want)
		}
	}
}

// TestGeminiToolSchema: a tool's parameters go as parametersJsonSchema,
// unchanged: $schema, $ref/$defs, const and additionalProperties, at any
// depth, reach the API, which refuses such keywords only under the older
// "parameters" field.
func TestGeminiToolSchema(t *testing.T) {
	const schema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","additionalProperties":false,
		"required":["path","kind"],"$defs":{"mode":{"type":"string","const":"w"}},
		"properties":{"path":{"type":"string"},"kind":{"const":"file"},"opts":{"type":"object","additionalProperties":false,"properties":{"mode":{"$ref":"#/$defs/mode"}}}}}`
	srv, m := gemini(t, func(llmtest.GeminiRequest) llmtest.Reply { return llmtest.Reply{Content: "ok"} })
	strict := []llm.Tool{{Name: "write", Description: "Write a file.", Parameters: json.RawMessage(schema)}}
	if _, err := m.Turn(context.Background(), firstConversation(), strict, llm.TurnOptions{}); err != nil {
		t.Fatalf("turn: %v", err)
	}
	var sent struct {
		Tools []struct {
			FunctionDeclarations []map[string]json.RawMessage `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	decl := sent.Tools[0].FunctionDeclarations[0]
	var got, want any
	if err := json.Unmarshal(decl["parametersJsonSchema"], &got); err != nil {
		t.Fatalf("parametersJsonSchema: %v (declaration %s)", err, decl)
	}
	_ = json.Unmarshal([]byte(schema), &want)
	if _, old := decl["parameters"]; old || !reflect.DeepEqual(got, want) {
		t.Errorf("declaration sent = %s\nwant parametersJsonSchema %s", decl, schema)
	}
}

// TestGeminiGemmaSystemPrompt: Gemma models refuse a system instruction
// (HTTP 400 "Developer instruction is not enabled"), so their system text
// opens the first user content; they get no thinking config either.
func TestGeminiGemmaSystemPrompt(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		srv := llmtest.NewGemini(t, func(r llmtest.GeminiRequest) llmtest.Reply {
			if first := r.Contents[0].Parts[0].Text; r.System != "" || first != "plan\n\n" || r.LastUser() != "plan\n\nfix Add" || r.IncludeThoughts {
				return llmtest.Fail("system %q, first part %q, user %q, thoughts %v", r.System, first, r.LastUser(), r.IncludeThoughts)
			}
			return llmtest.Reply{Content: "1. Fix Add."}
		})
		m := mustNew(t, llm.Spec{Provider: llm.ProviderGemini, Model: "gemma-3-27b-it"}, llm.Env{GeminiKey: "k", GeminiBaseURL: srv.URL()})
		if resp, err := m.Complete(context.Background(), llm.Request{System: "plan", Prompt: "fix Add", Stream: streaming}); err != nil || resp.Text != "1. Fix Add." {
			t.Errorf("streaming=%v: %+v, %v", streaming, resp, err)
		}
	}
}

// TestGeminiThoughtSummaries: a thinking model is asked for summaries of
// its thoughts, which keep a long think from looking like a stall; they
// never reach the answer or its stream.
func TestGeminiThoughtSummaries(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		_, m := gemini(t, func(r llmtest.GeminiRequest) llmtest.Reply {
			if !r.IncludeThoughts {
				return llmtest.Fail("thinkingConfig.includeThoughts not set")
			}
			return llmtest.Reply{Content: "1. Fix Add.", Thoughts: "**Reading add.go** I should look at Add first."}
		})
		var chunks []string
		req := llm.Request{Prompt: "fix Add"}
		if streaming {
			req.OnChunk = func(c string) { chunks = append(chunks, c) }
		}
		resp, err := m.Complete(context.Background(), req)
		if err != nil || resp.Text != "1. Fix Add." || (streaming && strings.Join(chunks, "") != "1. Fix Add.") {
			t.Errorf("streaming=%v: %+v, %v, chunks %q; want only the answer", streaming, resp, err, chunks)
		}
	}
}

// TestGeminiWithheldAnswer: a blocked prompt, or an answer stopped by the
// provider's filters with nothing said, is an invalid request naming the
// reason (asking again gets the same), not an empty, retried answer.
func TestGeminiWithheldAnswer(t *testing.T) {
	for _, reply := range []llmtest.Reply{{BlockReason: "PROHIBITED_CONTENT"}, {FinishReason: "SAFETY"}, {FinishReason: "RECITATION"}} {
		for _, streaming := range []bool{false, true} {
			_, m := gemini(t, func(llmtest.GeminiRequest) llmtest.Reply { return reply })
			_, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: streaming})
			reason := reply.BlockReason + reply.FinishReason
			var withheld *llm.RefusedContentError
			if e := asError(t, err); e.Kind != llm.KindInvalidRequest || !errors.As(err, &withheld) || !strings.Contains(err.Error(), reason) {
				t.Errorf("%s, streaming=%v: error %v (kind %v), want an invalid request naming %s", reason, streaming, err, e.Kind, reason)
			}
		}
	}
}

// TestGeminiCompletionCap: a streamed completion is cut off at the answer
// limit as it arrives, like the other providers' completions: the caller
// sees no more than the limit, and the error says the answer was too large.
func TestGeminiCompletionCap(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	srv := llmtest.NewGemini(t, func(llmtest.GeminiRequest) llmtest.Reply { return llmtest.Reply{Content: long, ChunkBytes: 512} })
	m := mustNew(t, llm.Spec{Provider: llm.ProviderGemini}, llm.Env{GeminiKey: "k", GeminiBaseURL: srv.URL(), MaxAnswer: "4KiB"})
	seen := 0
	_, err := m.Complete(context.Background(), llm.Request{Prompt: "fix Add", OnChunk: func(c string) { seen += len(c) }})
	var large *llm.TooLargeError
	if e := asError(t, err); e.Kind != llm.KindInvalidRequest || !errors.As(err, &large) || seen > 4<<10 {
		t.Errorf("error %v (kind %v), %d bytes streamed; want a too-large error after at most 4096", err, e.Kind, seen)
	}
}

// TestGeminiThoughtSignature: a call's thought signature, which Gemini 3
// requires back with the call, is kept with the call and sent back.
func TestGeminiThoughtSignature(t *testing.T) {
	body := `data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"search","args":{"pattern":"x"}},"thoughtSignature":"c2lnbmF0dXJl"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":5,"thoughtsTokenCount":30,"cachedContentTokenCount":4}}` + "\r\n\r\n"
	m := mustNew(t, llm.Spec{Provider: llm.ProviderGemini}, llm.Env{GeminiKey: "k", GeminiBaseURL: sse(t, body)})
	res, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	want := llm.TurnResult{ToolCalls: []llm.ToolCall{{ID: "gemini_0_0", Name: "search", Arguments: `{"pattern":"x"}`, Signature: "c2lnbmF0dXJl"}},
		Usage:      llm.Usage{InputTokens: 12, OutputTokens: 35, CacheReadTokens: 4}, // thinking is billed as output
		StopReason: llm.StopToolUse, ProviderStop: "STOP", Model: "gemini:" + llm.DefaultModels[llm.ProviderGemini]}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("turn = %+v\nwant %+v", res, want)
	}
	srv, m := gemini(t, func(r llmtest.GeminiRequest) llmtest.Reply {
		if p := r.Contents[1].Parts[0]; p.Call == nil || p.Signature != "c2lnbmF0dXJl" {
			return llmtest.Fail("call sent back as %+v, without its signature", p)
		}
		return llmtest.Reply{Content: "ok"}
	})
	conv := firstConversation()
	answerCalls(&conv, res)
	if _, err := m.Turn(context.Background(), conv, tools, llm.TurnOptions{}); err != nil {
		t.Errorf("turn sending the call back: %v (%d requests)", err, len(srv.Requests()))
	}
}

// TestGeminiClassifiesErrors: the API's failures are classified like the
// other providers': a 429 is retried after the wait its body names
// (RetryInfo, as Gemini sends it instead of a Retry-After header), a 500 or
// 503 is an outage a fallback chain passes to its next model, and a 400
// or a refused key (which Gemini answers with a 400 whose details say so)
// is never retried.
func TestGeminiClassifiesErrors(t *testing.T) {
	tests := []struct {
		reply     llmtest.Reply
		kind      llm.ErrorKind
		retry     time.Duration
		inMessage string
	}{
		{llmtest.Reply{Status: 429, RetryAfter: "4"}, llm.KindRateLimited, 4 * time.Second, "Resource has been exhausted"},
		{llmtest.Reply{Status: 500}, llm.KindTransient, 0, "(HTTP 500), try again later: An internal error"},
		{llmtest.Reply{Status: 503}, llm.KindTransient, 0, "The model is overloaded"},
		{llmtest.Reply{Status: 400, Content: "Request contains an invalid argument."}, llm.KindInvalidRequest, 0, "(HTTP 400): Request contains an invalid argument."},
		{llmtest.Reply{Status: 403, Content: "Permission denied"}, llm.KindAuth, 0, "set GEMINI_API_KEY to a valid key"},
		{llmtest.Reply{Status: 400, Content: llmtest.InvalidGeminiKey}, llm.KindAuth, 0, "rejected the API key (HTTP 400): set GEMINI_API_KEY to a valid key"},
		{llmtest.Reply{Status: 404}, llm.KindInvalidRequest, 0, `does not serve model "gemini-2.5-pro"`},
		{llmtest.Reply{}, llm.KindTransient, 0, "empty response"},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/streaming=%v", tt.reply.Status, streaming), func(t *testing.T) {
				_, m := gemini(t, func(llmtest.GeminiRequest) llmtest.Reply { return tt.reply })
				_, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: streaming})
				e := asError(t, err)
				if e.Kind != tt.kind || e.RetryAfter != tt.retry || !strings.Contains(err.Error(), tt.inMessage) {
					t.Errorf("error = %v (kind %v, retry after %v), want kind %v, %v, naming %q", err, e.Kind, e.RetryAfter, tt.kind, tt.retry, tt.inMessage)
				}
				wantRetry := tt.kind == llm.KindTransient || tt.kind == llm.KindRateLimited
				if e.Retryable() != wantRetry || llm.FailsOver(err) != wantRetry {
					t.Errorf("retryable %v, fails over %v; want %v", e.Retryable(), llm.FailsOver(err), wantRetry)
				}
			})
		}
	}
}

// TestGeminiFailsOverInAChain: a Gemini model answering HTTP 500 hands the
// same turn to the chain's next model, and the answer says why.
func TestGeminiFailsOverInAChain(t *testing.T) {
	_, down := gemini(t, func(llmtest.GeminiRequest) llmtest.Reply { return llmtest.Reply{Status: 500} })
	up := llmtest.New(t, llmtest.Text("answered"))
	next := mustNew(t, llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: up.URL()})
	chain := &llm.Chain{Links: []llm.Link{
		{Spec: llm.Spec{Provider: llm.ProviderGemini, Model: "gemini-2.5-pro"}, Model: down},
		{Spec: llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}, Model: next},
	}, Breakers: &llm.Breakers{Cooldown: time.Minute}}
	res, err := chain.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{})
	if err != nil || res.Text != "answered" || !strings.Contains(res.FellBack, "gemini:gemini-2.5-pro") || !strings.Contains(res.FellBack, "500") {
		t.Errorf("chain turn = %+v, %v; want the next model's answer, fallen back from gemini's HTTP 500", res, err)
	}
}

// TestGeminiBrokenStreams: a stream cut before its finish reason, or
// reporting an error midway, is a transient error, not a partial answer.
func TestGeminiBrokenStreams(t *testing.T) {
	const start = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Let me"}]}}]}` + "\r\n\r\n"
	for name, tt := range map[string]struct{ body, want string }{
		"cut":         {start, "without a finish reason"},
		"error event": {start + `data: {"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}` + "\r\n\r\n", "The model is overloaded. (UNAVAILABLE)"},
		"bad chunk":   {start + "data: {not json\r\n\r\n", "decode stream chunk"},
	} {
		t.Run(name, func(t *testing.T) {
			m := mustNew(t, llm.Spec{Provider: llm.ProviderGemini}, llm.Env{GeminiKey: "k", GeminiBaseURL: sse(t, tt.body)})
			_, err := m.Turn(context.Background(), firstConversation(), tools, llm.TurnOptions{Stream: true})
			if e := asError(t, err); e.Kind != llm.KindTransient || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v (kind %v), want transient naming %q", err, e.Kind, tt.want)
			}
		})
	}
}

// TestGeminiNeedsAKey: without a key the model is not built, and the
// error names both variables that give one.
func TestGeminiNeedsAKey(t *testing.T) {
	_, err := llm.New(llm.Spec{Provider: llm.ProviderGemini}, llm.Env{})
	if err == nil || !strings.Contains(err.Error(), "GEMINI_API_KEY") || !strings.Contains(err.Error(), "GOOGLE_API_KEY") {
		t.Errorf("error = %v, want one naming GEMINI_API_KEY and GOOGLE_API_KEY", err)
	}
}

// TestGeminiToolCalling: Gemini models take tools; the Gemma models the
// API also serves do not, so their tasks ask for fenced blocks.
func TestGeminiToolCalling(t *testing.T) {
	for model, want := range map[string]bool{"gemini-2.5-pro": true, "gemini-2.5-flash": true, "gemma-3-27b-it": false} {
		m := mustNew(t, llm.Spec{Provider: llm.ProviderGemini, Model: model}, llm.Env{GeminiKey: "k"})
		if m.ToolCalling() != want {
			t.Errorf("%s: tool calling %v, want %v", model, m.ToolCalling(), want)
		}
	}
}
