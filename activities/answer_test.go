package activities

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
)

// A fenced answer in the conversation changes the workspace as Generate's
// would; an answer without blocks leaves it; one that cannot be used says
// why; a position that holds no answer is bad input.
func TestApplyAnswer(t *testing.T) {
	e := newEnvAt(t, "")
	base := e.snapshot(t, map[string]string{"app.py": "x = 1\ny = 3\n"})
	n := start(t, e, "tr")
	answers := []string{
		"```path=app.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n```path=new.py\nprint('hi')\n```\n",
		"The change is done; nothing more to write.",
		"```path=../../etc/passwd\nroot::0:0\n```\n",
	}
	for i, text := range answers {
		n = run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: "tr", Position: n,
			Messages: []llm.Message{{Role: llm.RoleAssistant, Text: text}, {Role: llm.RoleUser, Text: "go on " + string(rune('a'+i))}}})
	}

	out := run[ApplyAnswerOutput](t, e, e.acts.ApplyAnswer, ApplyAnswerInput{Transcript: "tr", Position: 2, Snapshot: base})
	if out.Rejected != "" || out.Snapshot == base || !slices.Equal(out.Changed, []string{"app.py", "new.py"}) {
		t.Fatalf("apply = %+v", out)
	}
	files, err := e.acts.Store.GetSnapshot(context.Background(), out.Snapshot)
	if err != nil || len(files) != 2 || string(files[0].Data) != "x = 2\ny = 3\n" {
		t.Fatalf("files = %+v, %v", files, err)
	}
	if none := run[ApplyAnswerOutput](t, e, e.acts.ApplyAnswer, ApplyAnswerInput{Transcript: "tr", Position: 4, Snapshot: base}); none.Snapshot != base || none.Changed != nil || none.Rejected != "" {
		t.Fatalf("no blocks = %+v", none)
	}
	bad := run[ApplyAnswerOutput](t, e, e.acts.ApplyAnswer, ApplyAnswerInput{Transcript: "tr", Position: 6, Snapshot: base})
	if bad.Snapshot != base || !strings.Contains(bad.Rejected, "..") {
		t.Fatalf("path traversal = %+v", bad)
	}
	_, err = e.tenv.ExecuteActivity(e.acts.ApplyAnswer, ApplyAnswerInput{Transcript: "tr", Position: 1, Snapshot: base})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeBadInput {
		t.Fatalf("a user message applied: %v", err)
	}
}

// The plan is made with the project's instructions, and says which files
// they came from.
func TestPlanReadsProjectInstructions(t *testing.T) {
	e := newEnv(t, func(r llmtest.ChatRequest) llmtest.Reply {
		if !strings.Contains(r.LastUser(), "### AGENTS.md\nEvery change ships with a changelog entry.") {
			return llmtest.Fail("plan prompt without the instructions:\n%s", r.LastUser())
		}
		return llmtest.Reply{Content: "1. Fix total.\n2. Add a changelog entry."}
	})
	snap := e.snapshot(t, map[string]string{"AGENTS.md": "Every change ships with a changelog entry.\n", "app/models.py": modelsPy})
	out := run[PlanOutput](t, e, e.acts.Plan, PlanInput{Task: "Fix total.", Language: "python", InputSnapshot: snap, Model: "openai:gpt-4.1-mini"})
	if len(out.Steps) != 2 || !slices.Equal(out.Instructions, []string{"AGENTS.md"}) {
		t.Fatalf("plan = %+v", out)
	}
}

// A model without tool calling takes its turns with no tools on offer and
// answers in fenced blocks, which ApplyAnswer applies: the loop's fallback.
func TestFencedTurnWithoutToolCalling(t *testing.T) {
	srv := llmtest.New(t, func(r llmtest.ChatRequest) llmtest.Reply {
		if len(r.Tools) != 0 || !strings.Contains(r.LastUser(), "Output format:") {
			return llmtest.Fail("tools %v, prompt:\n%s", r.Tools, r.LastUser())
		}
		return llmtest.Reply{Content: "```path=app/models.py\n<<<<<<< SEARCH\n    return sum(items) + 1\n=======\n    return sum(items)\n>>>>>>> REPLACE\n```\n"}
	})
	e := newEnvAt(t, "")
	e.acts.Models = func(name string) (llm.Model, llm.Spec, error) {
		spec, err := llm.ParseSpec(name)
		if err != nil {
			return nil, spec, err
		}
		m, err := llm.New(spec, llm.Env{OllamaHost: strings.TrimSuffix(srv.URL(), "/v1")})
		return m, spec, err
	}
	snap := e.snapshot(t, map[string]string{"app/models.py": modelsPy})
	open := run[OpenStepOutput](t, e, e.acts.OpenStep, OpenStepInput{Transcript: "tr", Task: "total() is off by one.", Language: "python",
		Plan: []string{"Fix total."}, Step: 1, Snapshot: snap, Fenced: true})
	turn := run[ModelTurnOutput](t, e, e.acts.ModelTurn, ModelTurnInput{Transcript: "tr", Position: open.Length, Tools: ToolSetNone, Model: "ollama:codellama:7b"})
	out := run[ApplyAnswerOutput](t, e, e.acts.ApplyAnswer, ApplyAnswerInput{Transcript: "tr", Position: turn.Length - 1, Snapshot: snap})
	if out.Rejected != "" || !slices.Equal(out.Changed, []string{"app/models.py"}) {
		t.Fatalf("turn %+v, apply %+v", turn, out)
	}
}
