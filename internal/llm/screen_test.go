package llm_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// ScreenCalls turns a hostile turn's calls into ones a conversation can
// answer once each: an id repeated in the turn gets one of ours and a
// problem, one of an earlier turn only one of ours, a name no provider
// takes back is replaced, over-size arguments are dropped; good calls are
// left alone, and screening twice changes nothing.
func TestScreenCalls(t *testing.T) {
	huge := `{"path": "big.txt", "content": "` + strings.Repeat("x", llm.MaxToolArgumentBytes) + `"}`
	in := []llm.ToolCall{
		{ID: "a", Name: "read", Arguments: `{"path": "x.py"}`},
		{ID: "a", Name: "write", Arguments: `{"path": "y.py", "content": "1"}`},
		{ID: "call_1_0", Name: "list"}, // the id ours would take first
		{ID: "b", Name: ""},
		{ID: "c", Name: strings.Repeat("n", 100)},
		{ID: "d", Name: "write", Arguments: huge},
		{ID: "", Name: "list"},
		{ID: "e", Name: "exec", Arguments: `{not json`}, // the tools' to answer
		{ID: "old", Name: "list"},                       // an id of an earlier turn
		{ID: "old", Name: "list"},                       // and again in this one
	}
	earlier := []llm.Message{{Role: llm.RoleUser, Text: "go"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "old", Name: "list"}}},
		{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "old", Name: "list", Content: "a.py"}}}
	got := llm.ScreenCalls(in, earlier)
	if in[1].ID != "a" || in[5].Arguments != huge {
		t.Fatal("ScreenCalls changed its argument")
	}
	want := []struct{ id, name, problem string }{
		{"a", "read", ""},
		{"call_1_1", "write", `its id "a" is the id of an earlier call of this turn, so it is answered as "call_1_1"`},
		{"call_1_0", "list", ""},
		{"b", llm.InvalidToolName, "it names no tool"},
		{"c", llm.InvalidToolName, "is not a tool name"},
		{"d", "write", "more than the 256 KiB a call may carry"},
		{"call_6_0", "list", ""},
		{"e", "exec", ""},
		{"call_8_0", "list", ""},
		{"call_9_0", "list", `its id "old" is the id of an earlier call of this turn`},
	}
	ids := map[string]bool{"old": true}
	for i, w := range want {
		c := got[i]
		if c.ID != w.id || c.Name != w.name || (w.problem == "") != (c.Problem == "") || !strings.Contains(c.Problem, w.problem) {
			t.Errorf("call %d = %q %q problem %q; want %q %q with a problem saying %q", i, c.ID, c.Name, c.Problem, w.id, w.name, w.problem)
		}
		ids[c.ID] = true
	}
	if len(ids) != len(got)+1 {
		t.Errorf("ids %v are not unique", ids)
	}
	if n := len(got[5].Arguments); n > 100 {
		t.Errorf("the over-size call keeps %d bytes of arguments", n)
	}
	if again := llm.ScreenCalls(got, earlier); !reflect.DeepEqual(again, got) {
		t.Errorf("screening twice changed the calls:\n%+v\n%+v", again, got)
	}

	// Answered once each, the turn is a conversation both providers take.
	conv := llm.Conversation{Messages: append(earlier, llm.Message{Role: llm.RoleAssistant, ToolCalls: got})}
	for _, c := range got {
		conv.Append(llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: "ok"}})
	}
	if err := conv.Validate(); err != nil {
		t.Errorf("the screened turn, answered, is not a valid conversation: %v", err)
	}
}

// A streamed call whose arguments pass MaxToolArgumentBytes, sent as the
// providers send arguments, a few bytes per event, comes back refused and
// without them, over both protocols, in about the time reading the stream
// takes: the arguments are not joined piece by piece (which took 20 s for
// 1 MiB) nor kept past the limit.
func TestStreamedOverSizeArgumentsAreRefused(t *testing.T) {
	huge := `{"path": "big.txt", "content": "` + strings.Repeat("x", 1<<20) + `"}`
	reply := llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "write", Arguments: huge}, {ID: "c2", Name: "list", Arguments: `{}`}}}
	oa := llmtest.New(t, func(llmtest.ChatRequest) llmtest.Reply { return reply })
	an := llmtest.NewAnthropic(t, func(llmtest.MessagesRequest) llmtest.Reply { return reply })
	for _, p := range []struct {
		name string
		spec llm.Spec
		env  llm.Env
	}{
		{"openai", llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1-mini"}, llm.Env{OpenAIKey: "k", OpenAIBaseURL: oa.URL()}},
		{"anthropic", llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5"}, llm.Env{AnthropicKey: "k", AnthropicBaseURL: an.URL()}},
	} {
		t.Run(p.name, func(t *testing.T) {
			m, err := llm.New(p.spec, p.env)
			if err != nil {
				t.Fatal(err)
			}
			conv := llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Text: "write it"}}}
			tools := []llm.Tool{{Name: "write", Parameters: []byte(`{"type":"object"}`)}, {Name: "list", Parameters: []byte(`{"type":"object"}`)}}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			started := time.Now()
			res, err := m.Turn(ctx, conv, tools, llm.TurnOptions{Stream: true})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(started)
			if len(res.ToolCalls) != 2 {
				t.Fatalf("%d calls, want 2", len(res.ToolCalls))
			}
			big, small := res.ToolCalls[0], res.ToolCalls[1]
			if !strings.Contains(big.Problem, "more than the 256 KiB a call may carry") || len(big.Arguments) > 100 {
				t.Errorf("the over-size call: problem %q, %d bytes of arguments kept", big.Problem, len(big.Arguments))
			}
			if small.Problem != "" || small.Arguments != `{}` {
				t.Errorf("the small call: %+v", small)
			}
			t.Logf("%d bytes of arguments streamed in 16-byte pieces: read in %s", len(huge), took.Round(time.Millisecond))
		})
	}
}
