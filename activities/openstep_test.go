package activities

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/repogen"
	"github.com/autocoder/autocoder/internal/repomap"
	"github.com/autocoder/autocoder/internal/workspace"
)

// putFiles stores files as a snapshot.
func (e *env) putFiles(t *testing.T, files []workspace.File) string {
	t.Helper()
	id, err := e.acts.Store.PutSnapshot(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// In a generated repository of over 300 files, a step's first message
// holds a map within its budget that names the bug's file, the root's and
// the step's directory's AGENTS.md (not the CLAUDE.md beside the root's),
// the plan with its step, lessons, guidance and the last failure; a retry
// appends nothing.
func TestOpenStepLargeRepository(t *testing.T) {
	e := newEnvAt(t, "")
	r := repogen.Generate(repogen.Options{Seed: 1})
	files := append(slices.Clone(r.Files),
		workspace.File{Path: "AGENTS.md", Data: []byte("Money is always integer cents; never use float.\n")},
		workspace.File{Path: "CLAUDE.md", Data: []byte("Not read: AGENTS.md is beside it.\n")},
		workspace.File{Path: "acme/billing/AGENTS.md", Data: []byte("Billing rules round down.\n")},
		workspace.File{Path: "acme/catalog/AGENTS.md", Data: []byte("Catalog: not on the way to the work.\n")},
	)
	workspace.Sort(files)
	if len(files) < 300 {
		t.Fatalf("%d files", len(files))
	}
	in := OpenStepInput{
		Transcript: "step1", Task: r.Bug.Symptom + " Look at apply_discount.", Language: "python", TestCmd: r.TestCmd,
		Plan:     []string{"Fix apply_discount in acme/billing/rules.", "Add a regression test."},
		Step:     1,
		Snapshot: e.putFiles(t, files),
		Lessons:  "- integer division truncates\n", Guidance: []string{"keep the public API"},
		Failure:   "FAILED " + r.Bug.Test + "::test_apply_discount - assert 985 == 850",
		MapTokens: 1500,
	}
	out := run[OpenStepOutput](t, e, e.acts.OpenStep, in)
	if out.Length != 2 || out.Whole || !slices.Equal(out.Instructions, []string{"AGENTS.md", "acme/billing/AGENTS.md"}) {
		t.Fatalf("OpenStep = %+v", out)
	}
	msgs := e.messages(t, "step1")
	if len(msgs) != 2 || msgs[0].Role != llm.RoleSystem || msgs[1].Role != llm.RoleUser {
		t.Fatalf("transcript = %+v", msgs)
	}
	if sys := msgs[0].Text; !strings.Contains(sys, "call finish") || !strings.Contains(sys, "never weaken") {
		t.Errorf("system prompt:\n%s", sys)
	}
	first := msgs[1].Text
	for _, want := range []string{
		"Task:\n" + in.Task, "-> 1. Fix apply_discount", "Step 1 of 2: Fix apply_discount in acme/billing/rules.",
		"the tests you name when you finish", "pytest", r.TestCmd,
		"The project's instructions (AGENTS.md, acme/billing/AGENTS.md)", "never use float", "Billing rules round down.",
		"integer division truncates", "keep the public API", "assert 985 == 850",
		"Repository map: ", r.Bug.Path + "  (",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("first message lacks %q", want)
		}
	}
	if strings.Contains(first, "Not read") || strings.Contains(first, "Catalog:") {
		t.Error("first message quotes instructions off the way to the work")
	}
	mapText := first[strings.Index(first, "Repository map: "):]
	t.Logf("repository: %d files, %d bytes; first message: %d tokens, its map %d", len(files), r.Size(), repomap.Tokens(first), repomap.Tokens(mapText))
	if repomap.Tokens(mapText) > in.MapTokens {
		t.Errorf("map of %d tokens, budget %d", repomap.Tokens(mapText), in.MapTokens)
	}

	again := run[OpenStepOutput](t, e, e.acts.OpenStep, in)
	if again.Length != 2 || len(e.messages(t, "step1")) != 2 || !slices.Equal(again.Instructions, out.Instructions) {
		t.Fatalf("retry = %+v, %d messages", again, len(e.messages(t, "step1")))
	}
}

// A small project is shown whole, CLAUDE.md stands in for an absent
// AGENTS.md, a directory named only by the failure brings its own
// instructions, and a fenced conversation asks for fenced blocks.
func TestOpenStepSmallProject(t *testing.T) {
	e := newEnvAt(t, "")
	snap := e.snapshot(t, map[string]string{
		"CLAUDE.md":        "Use tabs.\n",
		"app/CLAUDE.md":    "App code has docstrings.\n",
		"app/models.py":    modelsPy,
		"tests/test_m.py":  "from app.models import total\n",
		"docs/AGENTS.md":   "Docs only.\n",
		"docs/overview.md": "# overview\n",
	})
	in := OpenStepInput{Transcript: "s", Task: "Fix total.", Language: "python", Plan: []string{"Fix total."}, Step: 1, Snapshot: snap,
		Failure: `File "/work/app/models.py", line 2, in total`, Fenced: true}
	out := run[OpenStepOutput](t, e, e.acts.OpenStep, in)
	if !out.Whole || !slices.Equal(out.Instructions, []string{"CLAUDE.md", "app/CLAUDE.md"}) {
		t.Fatalf("OpenStep = %+v", out)
	}
	first := e.messages(t, "s")[1].Text
	for _, want := range []string{"The project's instructions (CLAUDE.md, app/CLAUDE.md)", "### app/CLAUDE.md\nApp code has docstrings.", "This is the last step", "here are its files whole",
		"```path=app/models.py\ndef total(items):", "Output format:"} {
		if !strings.Contains(first, want) {
			t.Errorf("first message lacks %q:\n%s", want, first)
		}
	}
	if i := strings.Index(first, "Docs only."); i < strings.Index(first, "here are its files whole") {
		t.Error("instructions of an unrelated directory, before the files")
	}
	if sys := e.messages(t, "s")[0].Text; sys != systemPrompt {
		t.Errorf("fenced system prompt = %q", sys)
	}
}

// A rule only AGENTS.md states reaches the model in the step's first
// message, and a model that obeys it writes what the rule asks: the path
// from the project's file to the workspace, through OpenStep, a turn and
// its tool call.
func TestInstructionsReachTheModel(t *testing.T) {
	const rule = "Every new Python file starts with the line: # Copyright Acme"
	srv := llmtest.New(t, func(r llmtest.ChatRequest) llmtest.Reply {
		content := "CENTS = 100\n"
		if len(r.Messages) >= 2 && strings.Contains(r.Messages[1].Content, "### AGENTS.md\n"+rule) {
			content = "# Copyright Acme\n" + content
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "w", Name: "write", Arguments: fmt.Sprintf(`{"path":"app/money.py","content":%q}`, content)}}}
	})
	e, model := newEnvAt(t, srv.URL()), "openai:gpt-4.1-mini"
	snap := e.snapshot(t, map[string]string{"AGENTS.md": rule + "\n", "app/models.py": modelsPy})
	open := run[OpenStepOutput](t, e, e.acts.OpenStep, OpenStepInput{Transcript: "tr", Task: "Add a money module.", Language: "python",
		Plan: []string{"Add app/money.py."}, Step: 1, Snapshot: snap})
	turn := run[ModelTurnOutput](t, e, e.acts.ModelTurn, ModelTurnInput{Transcript: "tr", Position: open.Length, Tools: ToolSetWorkspace, Model: model})
	ran := run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: turn.Length, Snapshot: snap})
	files, err := e.acts.Store.GetSnapshot(context.Background(), ran.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	var written string
	for _, f := range files {
		if f.Path == "app/money.py" {
			written = string(f.Data)
		}
	}
	if strings.HasPrefix(written, "# Copyright Acme\n") && slices.Equal(open.Instructions, []string{"AGENTS.md"}) {
		return
	}
	t.Fatalf("instructions %v; the model wrote app/money.py as %q", open.Instructions, written)
}
