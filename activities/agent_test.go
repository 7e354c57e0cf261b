package activities

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/store"
)

// seen is what a scripted model checks of a turn's request, the same for
// both protocols: the tools offered and the tool results sent back after
// the last assistant message.
type seen struct {
	Tools   []string
	Results []seenResult
	All     []seenResult // every tool result in the request
}

type seenResult struct{ ID, Content string }

func newSeen(tools []llmtest.ToolDef, last, all []seenResult) seen {
	s := seen{Results: last, All: all}
	for _, t := range tools {
		s.Tools = append(s.Tools, t.Name)
	}
	return s
}

func openAISeen(r llmtest.ChatRequest) seen {
	var last, all []seenResult
	for _, m := range r.ToolResults() {
		last = append(last, seenResult{m.ToolCallID, m.Content})
	}
	for _, m := range r.Messages {
		if m.Role == "tool" {
			all = append(all, seenResult{m.ToolCallID, m.Content})
		}
	}
	return newSeen(r.Tools, last, all)
}

func anthropicSeen(r llmtest.MessagesRequest) seen {
	var last, all []seenResult
	for _, b := range r.ToolResults() {
		last = append(last, seenResult{b.ToolUseID, b.Content})
	}
	for _, m := range r.Messages {
		for _, b := range m.Blocks {
			if b.Type == "tool_result" {
				all = append(all, seenResult{b.ToolUseID, b.Content})
			}
		}
	}
	return newSeen(r.Tools, last, all)
}

// protocol serves scripted turns over one wire protocol and returns the
// model spec to ask for and a count of the requests served.
type protocol struct {
	name  string
	serve func(t *testing.T, steps []func(seen) llmtest.Reply) (model string, env llm.Env, calls func() int)
}

var protocols = []protocol{
	{"openai", func(t *testing.T, steps []func(seen) llmtest.Reply) (string, llm.Env, func() int) {
		srv := llmtest.New(t, llmtest.Steps(viewed(steps, openAISeen)...))
		return "openai:gpt-4.1-mini", llm.Env{OpenAIKey: "k", OpenAIBaseURL: srv.URL()}, srv.Calls
	}},
	{"anthropic", func(t *testing.T, steps []func(seen) llmtest.Reply) (string, llm.Env, func() int) {
		srv := llmtest.NewAnthropic(t, llmtest.Steps(viewed(steps, anthropicSeen)...))
		return "anthropic:claude-sonnet-4-5", llm.Env{AnthropicKey: "k", AnthropicBaseURL: srv.URL()},
			func() int { return len(srv.Requests()) }
	}},
}

func viewed[R any](steps []func(seen) llmtest.Reply, view func(R) seen) []func(R) llmtest.Reply {
	out := make([]func(R) llmtest.Reply, len(steps))
	for i, s := range steps {
		out[i] = func(r R) llmtest.Reply { return s(view(r)) }
	}
	return out
}

// agentEnv is newEnv with the model served over p's protocol.
func agentEnv(t *testing.T, p protocol, steps ...func(seen) llmtest.Reply) (e *env, model string, calls func() int) {
	model, llmEnv, calls := p.serve(t, steps)
	e = newEnvAt(t, "")
	e.acts.Models = func(name string) (llm.Model, llm.Spec, error) {
		spec, err := llm.ParseSpec(name)
		if err != nil {
			return nil, spec, err
		}
		m, err := llm.New(spec, llmEnv)
		return m, spec, err
	}
	return e, model, calls
}

// modelsPy is long enough that reading it costs more than a small budget.
var modelsPy = "def total(items):\n    return sum(items) + 1\n" + strings.Repeat("# pricing notes: totals are in cents\n", 60)

// start opens a conversation with a system message and the task.
func start(t *testing.T, e *env, id string) int {
	t.Helper()
	return run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: id, Messages: []llm.Message{
		{Role: llm.RoleSystem, Text: "You fix bugs with the tools given."},
		{Role: llm.RoleUser, Text: "total() is off by one; fix it."},
	}})
}

func (e *env) messages(t *testing.T, id string) []llm.Message {
	t.Helper()
	msgs, err := e.acts.conversation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// The loop's durable half on both protocols: a turn with text and two tool
// calls; running them appends both results with the calls' ids and names;
// the next turn's request carries them; a retried turn reuses its answer;
// an edit makes a new snapshot; past the context budget the oldest outputs
// reach the model as markers while the transcript keeps them whole.
func TestToolTurns(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			first := []llmtest.ToolCall{
				{ID: "call_search", Name: "search", Arguments: `{"pattern":"def total"}`},
				{ID: "call_read", Name: "read", Arguments: `{"path":"app/models.py"}`},
			}
			edit := llmtest.ToolCall{ID: "call_edit", Name: "edit",
				Arguments: `{"path":"app/models.py","old_text":"sum(items) + 1","new_text":"sum(items)"}`}
			e, model, calls := agentEnv(t, p,
				func(s seen) llmtest.Reply {
					if strings.Join(s.Tools, ",") != "list,read,search,write,edit,delete" {
						return llmtest.Fail("tools offered: %v", s.Tools)
					}
					return llmtest.Reply{Content: "Let me look.", ToolCalls: first}
				},
				func(s seen) llmtest.Reply {
					if len(s.Results) != 2 || s.Results[0].ID != "call_search" || s.Results[1].ID != "call_read" ||
						!strings.Contains(s.Results[0].Content, "app/models.py:1: def total(items):") ||
						!strings.Contains(s.Results[1].Content, "return sum(items) + 1") {
						return llmtest.Fail("results sent back: %+v", s.Results)
					}
					return llmtest.Reply{ToolCalls: []llmtest.ToolCall{edit}}
				},
				func(s seen) llmtest.Reply {
					if len(s.Results) != 1 || s.Results[0].ID != "call_edit" || strings.Contains(s.Results[0].Content, "elided") {
						return llmtest.Fail("edit result sent back: %+v", s.Results)
					}
					// Past the budget: the read's output is a marker, the
					// search's, shorter than a marker, is kept.
					if len(s.All) != 3 || !strings.HasPrefix(s.All[1].Content, `[output elided to fit the context: read {"path":"app/models.py"} returned `) ||
						!strings.Contains(s.All[0].Content, "def total") {
						return llmtest.Fail("results seen past the budget: %+v", s.All)
					}
					return llmtest.Reply{Content: "Fixed: total no longer adds one."}
				},
			)
			snap := e.snapshot(t, map[string]string{"app/models.py": modelsPy, "README.md": "# shop\n"})
			n := start(t, e, "tr")
			in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model, TaskID: "t1", Step: 1, Attempt: 1}

			turn := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
			if turn.StopReason != llm.StopToolUse || turn.Length != 3 || turn.Reused || len(turn.Calls) != 2 ||
				turn.Calls[0] != (CallSummary{ID: "call_search", Name: "search", Args: `{"pattern":"def total"}`, Label: "search def total"}) ||
				turn.Calls[1].ID != "call_read" || turn.Text != "Let me look." || turn.Usage.PromptTokens == 0 {
				t.Fatalf("first turn = %+v", turn)
			}
			// A retry of the same turn: no second model call, no second entry.
			again := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
			if !again.Reused || again.Length != 3 || len(again.Calls) != 2 || again.Calls[1] != turn.Calls[1] {
				t.Fatalf("retried turn = %+v", again)
			}
			if calls() != 1 || len(e.messages(t, "tr")) != 3 {
				t.Fatalf("retry: %d model calls, %d messages; want 1 and 3", calls(), len(e.messages(t, "tr")))
			}

			ran := run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: 3, Snapshot: snap})
			if ran.Length != 5 || ran.Snapshot != snap || len(ran.Changed) != 0 || len(ran.Results) != 2 {
				t.Fatalf("read-only tools = %+v", ran)
			}
			msgs := e.messages(t, "tr")
			for i, c := range first {
				r := msgs[3+i].Result
				if msgs[3+i].Role != llm.RoleTool || r == nil || r.CallID != c.ID || r.Name != c.Name || r.IsError {
					t.Fatalf("message %d = %+v, want the result of %s", 3+i, msgs[3+i], c.ID)
				}
			}
			// Running them again appends nothing.
			if ran2 := run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: 3, Snapshot: snap}); ran2.Length != 5 || len(e.messages(t, "tr")) != 5 {
				t.Fatalf("rerun = %+v", ran2)
			}

			in.Position = 5
			turn = run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
			if len(turn.Calls) != 1 || turn.Calls[0].Name != "edit" || turn.Length != 6 {
				t.Fatalf("second turn = %+v", turn)
			}
			ran = run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: 6, Snapshot: snap})
			if ran.Snapshot == snap || strings.Join(ran.Changed, ",") != "app/models.py" || ran.Results[0].IsError {
				t.Fatalf("edit = %+v", ran)
			}
			files, err := e.acts.Store.GetSnapshot(context.Background(), ran.Snapshot)
			if err != nil || string(files[1].Data) != strings.Replace(modelsPy, " + 1", "", 1) {
				t.Fatalf("edited files: %v, %.60q", err, files[1].Data)
			}

			// The messages alone fit this budget; with the tools offered they
			// do not, and the read's output, the one long enough, goes.
			messages := 0
			for _, m := range e.messages(t, "tr") {
				messages += messageTokens(m)
			}
			in.Position, in.ContextTokens = 7, messages+100
			turn = run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
			if turn.StopReason != llm.StopEnd || turn.Elided != 1 || turn.Length != 8 {
				t.Fatalf("last turn = %+v", turn)
			}
			if r := e.messages(t, "tr")[4].Result; !strings.Contains(r.Content, "return sum(items) + 1") {
				t.Fatalf("the stored read result lost its content: %q", r.Content)
			}
		})
	}
}

// A turn whose position another entry already holds is a conflict, never
// retried; a position past the transcript's end is bad input.
func TestModelTurnStalePosition(t *testing.T) {
	e, model, calls := agentEnv(t, protocols[0], func(seen) llmtest.Reply { return llmtest.Reply{Content: "an answer"} })
	n := start(t, e, "tr")
	in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model}
	run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)

	_, err := e.tenv.ExecuteActivity(e.acts.AppendMessages, AppendMessagesInput{Transcript: "tr", Position: n,
		Messages: []llm.Message{{Role: llm.RoleUser, Text: "something else"}}})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeTranscriptConflict || !appErr.NonRetryable() {
		t.Fatalf("append over the model's turn: %v", err)
	}
	in.Position = 5
	_, err = e.tenv.ExecuteActivity(e.acts.ModelTurn, in)
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeBadInput || !strings.Contains(err.Error(), "has 3 messages") {
		t.Fatalf("turn past the end: %v", err)
	}
	in.Position = 1 // the task's message: no model call for a turn with nowhere to go
	_, err = e.tenv.ExecuteActivity(e.acts.ModelTurn, in)
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeTranscriptConflict || !appErr.NonRetryable() {
		t.Fatalf("turn over the task's message: %v", err)
	}
	if calls() != 1 {
		t.Fatalf("%d model calls, want 1", calls())
	}
}

// faultyStore is the real store with faults put in: appends that fail, as
// a worker dying between the model's answer and its append would leave
// things, and memos that are never kept.
type faultyStore struct {
	store.Store
	failAppends int
	dropMemos   bool
}

func (s *faultyStore) AppendEntries(ctx context.Context, id string, pos int, entries [][]byte) ([]string, error) {
	if s.failAppends > 0 {
		s.failAppends--
		return nil, errors.New("injected: the database went away")
	}
	return s.Store.AppendEntries(ctx, id, pos, entries)
}

func (s *faultyStore) PutMemo(ctx context.Context, key string, value []byte) error {
	if s.dropMemos {
		return errors.New("injected: memo lost")
	}
	return s.Store.PutMemo(ctx, key, value)
}

// A turn whose answer could not be appended is retried from the memo: the
// model is paid once and the answer lands once.
func TestModelTurnRetryAfterFailedAppendReusesMemo(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			e, model, calls := agentEnv(t, p,
				func(seen) llmtest.Reply {
					return llmtest.Reply{Content: "Looking.", ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "list", Arguments: `{}`}}}
				},
				func(seen) llmtest.Reply { return llmtest.Reply{Content: "a second, different answer"} })
			n := start(t, e, "tr")
			faulty := &faultyStore{Store: e.acts.Store, failAppends: 1}
			e.acts.Store = faulty
			in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model}
			if _, err := e.tenv.ExecuteActivity(e.acts.ModelTurn, in); err == nil || !strings.Contains(err.Error(), "injected") {
				t.Fatalf("first try: %v", err)
			}
			out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
			if !out.Reused || len(out.Calls) != 1 || out.Calls[0].ID != "c1" || out.Length != n+1 {
				t.Fatalf("retry = %+v", out)
			}
			msgs := e.messages(t, "tr")
			if calls() != 1 || len(msgs) != n+1 || msgs[n].ToolCalls[0].ID != "c1" {
				t.Fatalf("%d model calls, transcript %+v", calls(), msgs)
			}
		})
	}
}

// When the memo was lost, a retried turn finds its answer in the
// transcript and does not ask the model again.
func TestModelTurnRetryWithoutMemoReusesTranscript(t *testing.T) {
	e, model, calls := agentEnv(t, protocols[0],
		func(seen) llmtest.Reply { return llmtest.Reply{Content: "first answer"} },
		func(seen) llmtest.Reply { return llmtest.Reply{Content: "a second, different answer"} })
	n := start(t, e, "tr")
	e.acts.Store = &faultyStore{Store: e.acts.Store, dropMemos: true}
	in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model}
	run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
	out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
	if !out.Reused || out.Text != "first answer" || out.StopReason != llm.StopEnd || calls() != 1 {
		t.Fatalf("retry = %+v after %d model calls", out, calls())
	}
}

// Arguments that are not JSON (cut off at the token limit) get an error
// result the model can act on, and the next turn still goes out, on both
// protocols, with the model's text sent back wrapped in an object.
func TestToolCallWithBrokenArgumentsKeepsTheLoopGoing(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			broken := `{"path": "app/mod`
			e, model, _ := agentEnv(t, p,
				func(seen) llmtest.Reply {
					return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "read", Arguments: broken}}}
				},
				func(s seen) llmtest.Reply {
					if len(s.Results) != 1 || !strings.Contains(s.Results[0].Content, "bad arguments for read") {
						return llmtest.Fail("results sent back: %+v", s.Results)
					}
					return llmtest.Reply{Content: "I will try again."}
				})
			snap := e.snapshot(t, map[string]string{"app/models.py": modelsPy})
			n := start(t, e, "tr")
			in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model}
			run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
			ran := run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: n + 1, Snapshot: snap})
			if !ran.Results[0].IsError {
				t.Fatalf("broken arguments ran: %+v", ran)
			}
			in.Position = ran.Length
			if out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in); out.Text != "I will try again." {
				t.Fatalf("next turn = %+v", out)
			}
			if got := e.messages(t, "tr")[n].ToolCalls[0].Arguments; got != broken {
				t.Fatalf("stored arguments = %q, want what the model wrote", got)
			}
		})
	}
}

// A model without native tool calling, or a tool set no one knows, fails
// the turn at once, before any request, with an error the workflow can
// tell apart.
func TestModelTurnRefusesWhatCannotWork(t *testing.T) {
	srv := llmtest.New(t, llmtest.Text("unused"))
	e := newEnvAt(t, "")
	e.acts.Models = func(name string) (llm.Model, llm.Spec, error) {
		spec, err := llm.ParseSpec(name)
		if err != nil {
			return nil, spec, err
		}
		m, err := llm.New(spec, llm.Env{OllamaHost: strings.TrimSuffix(srv.URL(), "/v1"), OpenAIKey: "k", OpenAIBaseURL: srv.URL()})
		return m, spec, err
	}
	n := start(t, e, "tr")
	for _, c := range []struct{ model, tools, errType string }{
		{"ollama:codellama:7b", ToolSetWorkspace, ErrTypeNoToolCalling},
		{"openai:gpt-4.1-mini", "everything", ErrTypeBadInput},
	} {
		_, err := e.tenv.ExecuteActivity(e.acts.ModelTurn, ModelTurnInput{Transcript: "tr", Position: n, Tools: c.tools, Model: c.model})
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != c.errType || !appErr.NonRetryable() {
			t.Errorf("%s with %q: %v, want %s", c.model, c.tools, err, c.errType)
		}
	}
	if srv.Calls() != 0 {
		t.Fatalf("%d requests sent", srv.Calls())
	}
}

// The workflow may run a turn's calls in parts (read-only ones here, a
// sandbox run elsewhere): each part appends after the last, and the
// transcript ends up a conversation every provider accepts.
func TestRunToolsInParts(t *testing.T) {
	e := newEnvAt(t, "")
	snap := e.snapshot(t, map[string]string{"app/models.py": modelsPy, "README.md": "# shop\n"})
	n := start(t, e, "tr")
	calls := []llm.ToolCall{
		{ID: "c1", Name: "read", Arguments: `{"path":"README.md"}`},
		{ID: "c2", Name: "write", Arguments: `{"path":"NOTES.md","content":"todo\n"}`},
		{ID: "c3", Name: "list", Arguments: `{"pattern":"*.md"}`},
	}
	n = run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: "tr", Position: n,
		Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: calls}}})

	first := run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: n, Snapshot: snap, CallIDs: []string{"c2"}})
	if first.Length != n+1 || first.Snapshot == snap || strings.Join(first.Changed, ",") != "NOTES.md" {
		t.Fatalf("first part = %+v", first)
	}
	rest := run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: first.Length, Snapshot: first.Snapshot, CallIDs: []string{"c3", "c1"}})
	if rest.Length != n+3 || rest.Snapshot != first.Snapshot || len(rest.Results) != 2 || rest.Results[0].ID != "c3" {
		t.Fatalf("second part = %+v", rest)
	}
	msgs := e.messages(t, "tr")
	if err := (llm.Conversation{Messages: msgs}).Validate(); err != nil {
		t.Fatal(err)
	}
	if got := msgs[n+1].Result.Content; !strings.Contains(got, "NOTES.md") {
		t.Fatalf("list after the write in an earlier part shows %q", got)
	}

	_, err := e.tenv.ExecuteActivity(e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: rest.Length, Snapshot: snap, CallIDs: []string{"c9"}})
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeBadInput || !strings.Contains(err.Error(), `no call "c9"`) {
		t.Fatalf("unknown call: %v", err)
	}
	_, err = e.tenv.ExecuteActivity(e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: 2, Snapshot: snap})
	if !errors.As(err, &appErr) || appErr.Type() != ErrTypeBadInput {
		t.Fatalf("no model turn before the position: %v", err)
	}
}

// A turn of malformed calls (two sharing an id, one naming no tool, one
// with over-size arguments) costs the model error results, not the task:
// the duplicate is answered under an id of ours, in the stored assistant
// message and in its result alike, so the next request, which the scripted
// servers refuse when a call is unanswered or answered twice, goes out; the
// over-size arguments are kept neither in the memo nor in the transcript.
func TestMalformedCallsAreAnsweredOnce(t *testing.T) {
	huge := `{"path": "big.txt", "content": "` + strings.Repeat("x", 1<<20) + `"}`
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			e, model, calls := agentEnv(t, p,
				func(seen) llmtest.Reply {
					return llmtest.Reply{ChunkBytes: 64 << 10, ToolCalls: []llmtest.ToolCall{
						{ID: "c1", Name: "read", Arguments: `{"path": "app/models.py"}`},
						{ID: "c1", Name: "write", Arguments: `{"path": "app/models.py", "content": "gone"}`},
						{ID: "c2", Name: "", Arguments: `{}`},
						{ID: "c3", Name: "write", Arguments: huge},
					}}
				},
				func(s seen) llmtest.Reply {
					if len(s.Results) != 4 {
						return llmtest.Fail("%d results sent back, want 4: %+v", len(s.Results), s.Results)
					}
					return llmtest.Reply{Content: "done"}
				})
			snap := e.snapshot(t, map[string]string{"app/models.py": modelsPy})
			n := start(t, e, "tr")
			in := ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model}
			out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in)
			var ids, names []string
			for _, c := range out.Calls {
				ids, names = append(ids, c.ID), append(names, c.Name)
			}
			if len(ids) != 4 || ids[0] != "c1" || ids[1] == "c1" || strings.Join(names, ",") != "read,,," {
				t.Fatalf("calls %q named %q; want the duplicate given an id of ours and the last three refused (no name)", ids, names)
			}
			ran := run[RunToolsOutput](t, e, e.acts.RunTools, RunToolsInput{Transcript: "tr", Position: n + 1, Snapshot: snap, CallIDs: ids})
			if ran.Snapshot != snap {
				t.Errorf("a refused write changed the workspace")
			}
			msgs := e.messages(t, "tr")
			wants := []string{modelsPy[:20], `its id "c1" is the id of an earlier call`, "it names no tool", "more than the 256 KiB a call may carry"}
			for i, want := range wants {
				r := msgs[n+1+i].Result
				if r.CallID != ids[i] || !strings.Contains(r.Content, want) || (i > 0) != r.IsError {
					t.Errorf("result %d = %+v; want call %s answered with %q", i, r, ids[i], want)
				}
			}
			for _, m := range msgs {
				for _, c := range m.ToolCalls {
					if len(c.Arguments) > llm.MaxToolArgumentBytes {
						t.Errorf("the transcript keeps %d bytes of arguments", len(c.Arguments))
					}
				}
			}
			memo, err := e.acts.Store.GetMemo(context.Background(), memoKey("turn", "tr", "2"))
			if err != nil || len(memo) > 64<<10 {
				t.Errorf("turn memo: %d bytes, %v; want it without the over-size arguments", len(memo), err)
			}
			t.Logf("a turn with %d bytes of arguments: memo %d bytes", len(huge), len(memo))
			in.Position = ran.Length
			if out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, in); out.Text != "done" {
				t.Fatalf("next turn = %+v", out)
			}
			if calls() != 2 {
				t.Errorf("%d requests, want 2", calls())
			}
		})
	}
}

// A turn an older worker memoized and appended without screening its calls
// (here two under one id), then crashed before finishing, is taken from
// the transcript as it stands on the retry: screening it now would append
// a different message at the same position, a TranscriptConflict.
func TestModelTurnRetryKeepsAnUnscreenedAppendedTurn(t *testing.T) {
	e, model, calls := agentEnv(t, protocols[0], func(seen) llmtest.Reply { return llmtest.Reply{Content: "unused"} })
	n := start(t, e, "tr")
	old := llm.TurnResult{StopReason: llm.StopToolUse, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "list"}, {ID: "c1", Name: "read", Arguments: `{"path": "a.py"}`}}}
	raw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.acts.Store.PutMemo(ctx, memoKey("turn", "tr", strconv.Itoa(n)), raw); err != nil {
		t.Fatal(err)
	}
	run[int](t, e, e.acts.AppendMessages, AppendMessagesInput{Transcript: "tr", Position: n, Messages: []llm.Message{old.Message()}})
	out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetWorkspace, Model: model})
	if !out.Reused || len(out.Calls) != 2 || out.Calls[1].ID != "c1" || calls() != 0 {
		t.Fatalf("retry = %+v after %d model calls; want the stored turn as it is", out, calls())
	}
}

// TestMCPCallSummaryShowsTheArgumentsForApproval: a person approving an
// MCP call reads what it sends, not a one-line label: padding cannot push
// the part that matters out of sight, and arguments too long to show say
// they were cut.
func TestMCPCallSummaryShowsTheArgumentsForApproval(t *testing.T) {
	args := `{"comment":"` + strings.Repeat("harmless ", 12) + `","sql":"DROP TABLE users"}`
	s := callSummary(llm.ToolCall{ID: "c1", Name: "mcp__db__query", Arguments: args})
	if !strings.Contains(s.Command, "DROP TABLE users") || !strings.HasPrefix(s.Command, "mcp__db__query ") {
		t.Errorf("approval text %q lacks the whole arguments", s.Command)
	}
	long := `{"sql":"` + strings.Repeat("x", 2*commandBytes) + `"}`
	s = callSummary(llm.ToolCall{ID: "c2", Name: "mcp__db__query", Arguments: long})
	if len(s.Command) > commandBytes+200 || !strings.Contains(s.Command, "cut: ") {
		t.Errorf("approval text of long arguments (%d bytes) does not say it was cut: %.80q…", len(s.Command), s.Command)
	}
}

// TestLongRunCommandIsNotApprovedByARule: a command longer than what a
// person is shown says it was cut, and the notice holds a shell
// metacharacter, so an allow rule matching its visible head (pytest)
// never approves what follows out of sight.
func TestLongRunCommandIsNotApprovedByARule(t *testing.T) {
	cmd := "pytest" + strings.Repeat(" ", 2*commandBytes) + "&& rm -rf ."
	args, _ := json.Marshal(map[string]string{"command": cmd})
	s := callSummary(llm.ToolCall{ID: "c1", Name: ToolRun, Arguments: string(args)})
	if !strings.HasPrefix(s.Command, "pytest") || !strings.Contains(s.Command, "cut: ") || !strings.ContainsAny(s.Command, ";&|`$<>\n") {
		t.Errorf("approval text of a %d-byte command: %.60q…%q; want its head, a cut notice and a metacharacter", len(cmd), s.Command, s.Command[max(0, len(s.Command)-80):])
	}
	if short := callSummary(llm.ToolCall{ID: "c2", Name: ToolRun, Arguments: `{"command":"pytest -q"}`}); short.Command != "pytest -q" {
		t.Errorf("a short command reads %q", short.Command)
	}
}

// TestInstallCallSummaryNamesThePackages: a person approving an install
// reads every package it adds, and whether for the tests alone.
func TestInstallCallSummaryNamesThePackages(t *testing.T) {
	s := callSummary(llm.ToolCall{ID: "c1", Name: "install", Arguments: `{"packages":["requests==2.32.3","pytest-mock"],"dev":true}`})
	if s.Command != "install requests==2.32.3 pytest-mock (for the tests)" || s.Label != "install requests==2.32.3 pytest-mock" {
		t.Errorf("install summarized as %+v", s)
	}
}
