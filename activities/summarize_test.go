package activities

import (
	"fmt"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// notes is what the model wrote on turn k: long enough that no budget
// below keeps every turn, and unlike a tool output never elided.
func notes(k int) string {
	return fmt.Sprintf("note %d: ", k) + strings.Repeat(fmt.Sprintf("reading the pricing code, pass %d. ", k), 60)
}

// longConversation opens a transcript and adds four turns, each the
// model's notes with a read and its result; it returns the length.
func longConversation(t *testing.T, e *env, id string) int {
	t.Helper()
	n := start(t, e, id)
	for k := range 4 {
		call := llm.ToolCall{ID: fmt.Sprintf("c%d", k), Name: "read", Arguments: fmt.Sprintf(`{"path":"f%d.py"}`, k)}
		n = run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: id, Position: n, Messages: []llm.Message{
			{Role: llm.RoleAssistant, Text: notes(k), ToolCalls: []llm.ToolCall{call}},
			{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: call.ID, Name: "read", Content: fmt.Sprintf("1: contents of f%d.py\n", k) + strings.Repeat("2: # padding\n", 40)}},
		}})
	}
	return n
}

// contextFor is the ContextTokens that leaves messages tokens for the
// messages once the workspace tools are counted.
func contextFor(t *testing.T, messages int) int {
	offered, err := toolSet(ToolSetWorkspace, lang.Add{})
	if err != nil {
		t.Fatal(err)
	}
	return messages + DefaultContextTokens - messageBudget(0, offered)
}

// Past the budget with every older output elided, a turn asks for a
// summary instead of calling the model; the summary is one model call,
// memoized (asked again, nothing is sent); the next turn sends the
// opening, the summary and the latest turn, not the turns it covers.
func TestSummarizeOlderTurns(t *testing.T) {
	const summary = "Read f0.py to f2.py: the pricing code divides by 1000."
	srv := llmtest.New(t, llmtest.Steps(
		func(r llmtest.ChatRequest) llmtest.Reply {
			u := r.LastUser()
			if len(r.Tools) != 0 || !strings.Contains(r.System(), "summarize") || !strings.Contains(u, "note 0:") ||
				!strings.Contains(u, "note 2:") || strings.Contains(u, "note 3:") || strings.Contains(u, "total() is off by one") ||
				!strings.Contains(u, "[call read c1] {\"path\":\"f1.py\"}") || !strings.Contains(u, "1: contents of f2.py") {
				return llmtest.Fail("summary request: system %q, prompt:\n%s", r.System(), u)
			}
			return llmtest.Reply{Content: summary}
		},
		func(r llmtest.ChatRequest) llmtest.Reply {
			var all []string
			for _, m := range r.Messages {
				all = append(all, m.Role+": "+m.Content)
			}
			text := strings.Join(all, "\n")
			if len(r.Messages) != 5 || r.Messages[1].Content != "total() is off by one; fix it." ||
				!strings.HasPrefix(r.Messages[2].Content, "Summary of earlier turns (6 messages elided") ||
				!strings.Contains(r.Messages[2].Content, summary) || !strings.HasPrefix(r.Messages[3].Content, "note 3:") ||
				strings.Contains(text, "note 0:") || strings.Contains(text, "note 2:") || len(r.Tools) == 0 {
				return llmtest.Fail("turn after the summary:\n%s", text)
			}
			return llmtest.Reply{Content: "Fixed."}
		},
	))
	e := newEnvAt(t, srv.URL())
	n := longConversation(t, e, "tr")
	in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: "openai:gpt-4.1-mini",
		ContextTokens: contextFor(t, 1200)}

	turn := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
	if !turn.NeedsSummary || turn.SummarizeTo != 8 || turn.Length != n || turn.Elided == 0 || srv.Calls() != 0 {
		t.Fatalf("turn over the budget = %+v after %d requests", turn, srv.Calls())
	}
	if len(e.messages(t, "tr")) != n {
		t.Fatal("a turn that asked for a summary appended something")
	}

	sin := SummarizeInput{Transcript: "tr", Position: turn.SummarizeTo, Model: in.Model}
	sum := run[SummarizeOutput](t, e, e.acts.Summarize, sin)
	if sum.Summary.Covers != 8 || sum.Summary.Key == "" || sum.Usage.Calls != 1 || srv.Calls() != 1 {
		t.Fatalf("summary = %+v after %d requests", sum, srv.Calls())
	}
	if again := run[SummarizeOutput](t, e, e.acts.Summarize, sin); again.Summary != sum.Summary || srv.Calls() != 1 {
		t.Fatalf("retried summary = %+v after %d requests", again, srv.Calls())
	}

	in.Summary = &sum.Summary
	turn = run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
	if turn.NeedsSummary || turn.Text != "Fixed." || turn.Length != n+1 || srv.Calls() != 2 {
		t.Fatalf("turn with the summary = %+v after %d requests", turn, srv.Calls())
	}
	if len(e.messages(t, "tr")) != n+1 {
		t.Fatal("the transcript lost or gained messages")
	}
}

// However small the budget, summaries stop once they cover every turn:
// the turn then goes out as it is instead of asking again.
func TestSummaryNeverLoops(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.ChatRequest) llmtest.Reply {
		if len(r.Tools) == 0 {
			return llmtest.Reply{Content: fmt.Sprintf("summary %d", len(r.Messages[len(r.Messages)-1].Content))}
		}
		return llmtest.Reply{Content: "going on"}
	})
	e := newEnvAt(t, srv.URL())
	n := longConversation(t, e, "tr")
	in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: "openai:gpt-4.1-mini", ContextTokens: contextFor(t, 10)}
	var prev *TurnSummary
	var tos []int
	for range 5 {
		turn := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
		if !turn.NeedsSummary {
			if turn.Text != "going on" {
				t.Fatalf("turn = %+v", turn)
			}
			break
		}
		tos = append(tos, turn.SummarizeTo)
		s := run[SummarizeOutput](t, e, e.acts.Summarize, SummarizeInput{Transcript: "tr", Position: turn.SummarizeTo, Model: in.Model, Previous: prev})
		prev, in.Summary = &s.Summary, &s.Summary
	}
	if fmt.Sprint(tos) != "[8 10]" || srv.Calls() != 3 {
		t.Fatalf("summarized to %v, %d requests; want [8 10] and 3", tos, srv.Calls())
	}
}

// A summary cannot cut between the model's calls and their results, nor
// into the opening messages.
func TestSummarizeRefusesBadCuts(t *testing.T) {
	e := newEnvAt(t, "")
	n := longConversation(t, e, "tr")
	for _, pos := range []int{1, 3, n + 1} {
		if _, err := e.tenv.ExecuteActivity(e.acts.Summarize, SummarizeInput{Transcript: "tr", Position: pos, Model: "openai:gpt-4.1-mini"}); err == nil {
			t.Errorf("summary to %d accepted", pos)
		}
	}
}

func TestCallLabel(t *testing.T) {
	for _, c := range []struct{ name, args, want string }{
		{"read", `{"path":"app/models.py"}`, "read app/models.py"},
		{"read", `{"path":"app/models.py","start_line":10,"end_line":40}`, "read app/models.py:10-40"},
		{"search", `{"pattern":"TODO","path":"*.py"}`, "search TODO in *.py"},
		{"list", `{}`, "list files"},
		{"edit", `{"path":"app/models.py","old_text":"a","new_text":"b"}`, "edit app/models.py"},
		{"run", `{"command":"pytest -x\n  tests/test_api.py"}`, "run pytest -x tests/test_api.py"},
		{"run", `{"command":"` + strings.Repeat("x", 300) + `"}`, "run " + strings.Repeat("x", 96) + "…"},
		{"run_tests", `{}`, "run the tests"},
		{"install", `{"packages":["requests==2.32.3","flask"]}`, "install requests==2.32.3 flask"},
		{"read", `{"path": "app/mod`, "read"},
		{"finish", `{"summary":"done"}`, "finish"},
	} {
		if got := CallLabel(c.name, c.args); got != c.want {
			t.Errorf("CallLabel(%s, %s) = %q, want %q", c.name, c.args, got, c.want)
		}
	}
}

// A turn's output carries finish's arguments and a run call's command
// (its head and a notice, when long), with a label for each call.
func TestModelTurnReportsFinishAndCommands(t *testing.T) {
	long := "pytest -x tests/test_api.py " + strings.Repeat("-k x ", 250) // over commandBytes
	srv := llmtest.New(t, llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "r", Name: "run", Arguments: fmt.Sprintf(`{"command":%q}`, long)},
			{ID: "f", Name: "finish", Arguments: `{"summary":"Fixed total.","tests":["tests/test_api.py::test_total"]}`},
		}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "f2", Name: "finish", Arguments: `{"summary": 3`}}},
	))
	e := newEnvAt(t, srv.URL())
	n := start(t, e, "tr")
	in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: "openai:gpt-4.1-mini"}
	out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
	if len(out.Calls) != 2 || !strings.HasPrefix(out.Calls[0].Command, long[:commandBytes]+" … (cut: ") || !strings.HasPrefix(out.Calls[0].Label, "run pytest -x tests/test_api.py -k x") ||
		out.Calls[1].Label != "finish" || out.Calls[1].Command != "" ||
		out.Finish == nil || out.Finish.Summary != "Fixed total." || strings.Join(out.Finish.Tests, ",") != "tests/test_api.py::test_total" {
		t.Fatalf("turn = %+v finish %+v", out, out.Finish)
	}
	// The broken finish is answered by its results elsewhere; here only the
	// output matters, so the call is answered to keep the conversation valid.
	n = run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: "tr", Position: out.Length, Messages: []llm.Message{
		{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "r", Name: "run", Content: "ok"}},
		{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: "f", Name: "finish", Content: "ok"}},
	}})
	in.Position = n
	out = run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
	if out.Finish == nil || out.Finish.Summary != "" || out.Finish.Tests != nil {
		t.Fatalf("broken finish = %+v", out.Finish)
	}
}
