package activities

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/llm"
)

func readCall(id, path string) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "read", Arguments: `{"path":"` + path + `"}`}}}
}

func readResult(id, content string) llm.Message {
	return llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: id, Name: "read", Content: content}}
}

// Past the budget, the oldest outputs go first, each replaced by a marker
// naming its call, until the request is down to two thirds of the budget;
// the latest turn's outputs stay; the input is unchanged.
func TestFitContextElidesOldestOutputsFirst(t *testing.T) {
	big := strings.Repeat("x = 1\n", 1000) // 6000 bytes, 1500 tokens
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Text: "sys"},
		{Role: llm.RoleUser, Text: "task"},
		readCall("c1", "one.py"), readResult("c1", big),
		readCall("c2", "two.py"), readResult("c2", big),
		readCall("c3", "three.py"), readResult("c3", big),
		readCall("c4", "four.py"), readResult("c4", big),
	}
	orig := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		orig[i] = m
		if m.Result != nil {
			r := *m.Result
			orig[i].Result = &r
		}
	}

	same, n := fitContext(msgs, 7000)
	if n != 0 || !reflect.DeepEqual(same, msgs) {
		t.Fatalf("under the budget: %d elided", n)
	}

	// 6,000 tokens of outputs against 5,000: eliding two brings the
	// request to about 3,100, under two thirds of the budget.
	got, n := fitContext(msgs, 5000)
	want := fmt.Sprintf(`[output elided to fit the context: read {"path":"one.py"} returned %d bytes here; call it again if you need them]`, len(big))
	if n != 2 || got[3].Result.Content != want || !strings.HasPrefix(got[5].Result.Content, "[output elided") ||
		got[7].Result.Content != big || got[9].Result.Content != big {
		t.Fatalf("elided %d: %q / %.20q / %.20q / %.20q", n, got[3].Result.Content, got[5].Result.Content, got[7].Result.Content, got[9].Result.Content)
	}
	if got[3].Result.CallID != "c1" || got[3].Result.Name != "read" {
		t.Fatalf("marker lost its call: %+v", got[3].Result)
	}

	// Far past it: every older output goes, never the latest turn's.
	got, n = fitContext(msgs, 100)
	if n != 3 || !strings.HasPrefix(got[7].Result.Content, "[output elided") || got[9].Result.Content != big {
		t.Fatalf("elided %d: %.40q / %.20q", n, got[7].Result.Content, got[9].Result.Content)
	}
	if !reflect.DeepEqual(msgs, orig) {
		t.Fatal("fitContext changed the stored messages")
	}
	if err := (llm.Conversation{Messages: got}).Validate(); err != nil {
		t.Fatalf("elided conversation: %v", err)
	}
}

// Each turn's request begins with what the turn before it sent, so the
// provider's prompt cache serves it, except at a turn that must elide:
// that turn rewrites the prefix once, and enough for the next turns to fit
// without rewriting it again.
func TestFitContextKeepsThePrefixSent(t *testing.T) {
	const budget, turns = 20_000, 60
	msgs := []llm.Message{{Role: llm.RoleSystem, Text: "sys"}, {Role: llm.RoleUser, Text: "task"}}
	var prev []llm.Message
	rewrites, sinceRewrite := 0, 0
	for i := range turns {
		id := fmt.Sprintf("c%d", i)
		msgs = append(msgs, readCall(id, id+".py"), readResult(id, strings.Repeat(fmt.Sprintf("line %d\n", i), 750)))
		req, _ := fitContext(msgs, budget)
		if requestTokens(req) > budget {
			t.Fatalf("turn %d: %d tokens sent, over the budget", i, requestTokens(req))
		}
		sinceRewrite++
		if prev != nil && !reflect.DeepEqual(req[:len(prev)], prev) {
			rewrites++
			if sinceRewrite < 3 {
				t.Errorf("turn %d rewrites the prefix %d turns after the last rewrite", i, sinceRewrite)
			}
			sinceRewrite = 0
		}
		prev = req
	}
	// 60 turns of 1,500 tokens against 20,000: each rewrite makes room for
	// a third of the budget, four or five turns.
	if rewrites == 0 || rewrites > turns/4 {
		t.Errorf("%d rewrites of the prefix in %d turns", rewrites, turns)
	}
}

// Outputs shorter than their marker are left alone.
func TestFitContextKeepsShortOutputs(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleUser, Text: strings.Repeat("long task ", 200)},
		readCall("c1", "a.py"), readResult("c1", "x = 1\n"),
		readCall("c2", "b.py"), readResult("c2", "y = 2\n"),
	}
	got, n := fitContext(msgs, 10)
	if n != 0 || got[2].Result.Content != "x = 1\n" {
		t.Fatalf("elided %d: %q", n, got[2].Result.Content)
	}
}

// Only calls whose arguments are not a JSON object are wrapped, in a copy.
func TestSendableArguments(t *testing.T) {
	msgs := []llm.Message{
		{Role: llm.RoleUser, Text: "task"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{
			{ID: "a", Name: "read", Arguments: `{"path":"x"}`},
			{ID: "b", Name: "read", Arguments: `{"path": "cut`},
			{ID: "c", Name: "list", Arguments: ``},
			{ID: "d", Name: "list", Arguments: `[1]`},
		}},
	}
	got := sendableArguments(msgs)
	args := func(m []llm.Message) []string {
		var out []string
		for _, c := range m[1].ToolCalls {
			out = append(out, c.Arguments)
		}
		return out
	}
	want := []string{`{"path":"x"}`, `{"unparsed_arguments":"{\"path\": \"cut"}`, ``, `{"unparsed_arguments":"[1]"}`}
	if !reflect.DeepEqual(args(got), want) {
		t.Fatalf("sent %q, want %q", args(got), want)
	}
	if msgs[1].ToolCalls[1].Arguments != `{"path": "cut` {
		t.Fatal("the stored message was changed")
	}
	if clean := msgs[:1]; &sendableArguments(clean)[0] != &clean[0] {
		t.Fatal("a conversation without broken arguments was copied")
	}
}

// The tool definitions come out of the budget first.
func TestMessageBudgetCountsTools(t *testing.T) {
	offered, err := toolSet(ToolSetWorkspace, lang.Add{})
	if err != nil {
		t.Fatal(err)
	}
	full := messageBudget(0, nil)
	left := messageBudget(0, offered)
	if full != DefaultContextTokens || left >= full-200 {
		t.Fatalf("budget %d without tools, %d with the workspace set", full, left)
	}
	if got := messageBudget(10, offered); got != 1 {
		t.Fatalf("a budget smaller than the tools leaves %d", got)
	}
}
