package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/tools"
	"github.com/autocoder/autocoder/internal/truncate"
)

// ErrTypeNoToolCalling is a model that cannot call tools: the workflow
// falls back to fenced blocks.
const ErrTypeNoToolCalling = "NoToolCalling"

// Tool sets a turn may offer.
const (
	ToolSetWorkspace = "workspace" // list, read, search, write, edit, delete
	ToolSetReadOnly  = "read-only" // list, read, search
)

// toolSet returns the named set's definitions in the model's terms. The
// agent set offers install only with add, the language's way to add
// packages (Activities.adds), whose example it names.
func toolSet(name string, add lang.Add) ([]llm.Tool, error) {
	var out []llm.Tool
	for _, d := range tools.AgentDefs() {
		switch name {
		case ToolSetAgent:
			if d.Name == tools.NameInstall {
				if add.Command == nil {
					continue
				}
				d.Description += fmt.Sprintf(" Name each package as this project's registry does, e.g. %q.", add.Example)
			}
		case ToolSetWorkspace:
			if tools.KindOf(d.Name) != tools.Workspace {
				continue
			}
		case ToolSetReadOnly:
			if !tools.ReadOnly(d.Name) {
				continue
			}
		default:
			return nil, badInput("unknown tool set %q; the sets are %s, %s and %s", name, ToolSetAgent, ToolSetWorkspace, ToolSetReadOnly)
		}
		params, err := json.Marshal(d.Parameters)
		if err != nil {
			return nil, fmt.Errorf("encode tool %s: %w", d.Name, err)
		}
		out = append(out, llm.Tool{Name: d.Name, Description: d.Description, Parameters: params})
	}
	return out, nil
}

// ModelTurnInput asks for the model's next turn of a conversation.
type ModelTurnInput struct {
	Transcript string `json:"transcript"`
	// Position is the transcript's length as the workflow knows it: the
	// answer goes there.
	Position int    `json:"position"`
	Tools    string `json:"tools"` // a tool set: ToolSetWorkspace or ToolSetReadOnly
	Model    string `json:"model"`
	// Language is the task's, for the tools only some languages have
	// (install); a turn scheduled before it was sent is offered none.
	Language string `json:"language,omitempty"`
	// MaxOutputTokens bounds the answer; zero is the client's default.
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"`
	// ContextTokens bounds the request; zero is DefaultContextTokens.
	ContextTokens int `json:"contextTokens,omitempty"`
	// Summary, when set, is sent in place of the older turns it covers.
	Summary *TurnSummary `json:"summary,omitempty"`
	// Labels for logs.
	TaskID  string `json:"taskId,omitempty"`
	Step    int    `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// CallSummary names one tool call for the workflow and status lines; the
// arguments themselves stay in the transcript, out of workflow history.
type CallSummary struct {
	ID string `json:"id"`
	// Name is the tool called. It is empty for a call refused before it
	// runs (a problem of its form, see llm.ScreenCalls): the workflow
	// routes it, as any name it does not know, to RunTools, which answers
	// it with the problem; a refused finish therefore ends nothing.
	Name string `json:"name"`
	Args string `json:"args,omitempty"` // the start of the arguments
	// Label says what the call does, for people: "read app/models.py".
	Label string `json:"label,omitempty"`
	// Command is a run call's whole command (up to commandBytes), an
	// install call's packages ("install requests==2.32.3"), or an MCP
	// call's name and arguments, for approval and the allow-list.
	Command string `json:"command,omitempty"`
	// Ask is set on a call to an MCP server whose entry asks a person
	// before each call.
	Ask bool `json:"ask,omitempty"`
}

// FinishArgs are the arguments of the model's finish call: what it did and
// the tests the step made pass, which judge a step before the last.
type FinishArgs struct {
	Summary string   `json:"summary"`
	Tests   []string `json:"tests,omitempty"`
}

// Calls the workflow routes itself rather than to RunTools.
const (
	ToolRun      = tools.NameRun
	ToolRunTests = tools.NameRunTests
	ToolInstall  = tools.NameInstall
	ToolFinish   = tools.NameFinish
)

// ModelTurnOutput is what the workflow needs of a turn: small, so the
// conversation stays in the store.
type ModelTurnOutput struct {
	Calls      []CallSummary  `json:"calls,omitempty"`
	Text       string         `json:"text,omitempty"` // the start of the model's words
	StopReason llm.StopReason `json:"stopReason"`
	Usage      Usage          `json:"usage"`
	Length     int            `json:"length"` // the transcript's length after the turn
	// Elided counts older tool outputs left out of the request.
	Elided int `json:"elided,omitempty"`
	// Reused is set when the answer came from an earlier try of this turn.
	Reused bool `json:"reused,omitempty"`
	// Model is the "provider:model" that answered; FellBack says why the
	// models before it in the task's chain did not ("anthropic:x: HTTP 503").
	Model    string `json:"model,omitempty"`
	FellBack string `json:"fellBack,omitempty"`
	// NeedsSummary is set, and the model not called, when the request does
	// not fit the context budget even with older tool outputs elided: the
	// workflow summarizes the older turns (Summarize, with Position
	// SummarizeTo and Previous the summary in use) and asks again. It is
	// never set twice for the same SummarizeTo: once every turn is
	// summarized the request goes out as it is.
	NeedsSummary bool `json:"needsSummary,omitempty"`
	SummarizeTo  int  `json:"summarizeTo,omitempty"`
	// Finish holds the arguments of a finish call, when the turn made one;
	// arguments that do not decode leave its fields empty.
	Finish *FinishArgs `json:"finish,omitempty"`
}

// summaryBytes bounds the text and arguments a turn's output repeats.
const summaryBytes = 200

// ModelTurn sends the conversation up to Position to the model, with the
// tool set on offer, and appends its answer at Position. The answer is
// memoized before it is used, keyed by transcript and position, so a retry
// after a crash never pays for the turn twice; an answer already in the
// transcript is reused too.
func (a *Activities) ModelTurn(ctx context.Context, in ModelTurnInput) (ModelTurnOutput, error) {
	var offered []llm.Tool
	if in.Tools != ToolSetNone {
		var add lang.Add
		if l, err := language(in.Language); err == nil {
			add = a.adds(l)
		}
		var err error
		if offered, err = toolSet(in.Tools, add); err != nil {
			return ModelTurnOutput{}, err
		}
	}
	if in.Tools == ToolSetAgent {
		offered = append(offered, a.mcpToolDefs(ctx)...)
	}
	msgs, err := a.conversationTo(ctx, in.Transcript, in.Position)
	if err != nil {
		return ModelTurnOutput{}, err
	}
	model, spec, err := a.model(in.Model)
	if err != nil {
		return ModelTurnOutput{}, err
	}
	if len(offered) > 0 && !model.ToolCalling() {
		return ModelTurnOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("model %s has no native tool calling", spec), ErrTypeNoToolCalling, nil)
	}
	log := activity.GetLogger(ctx)
	sent, covers, err := a.summarized(ctx, in.Transcript, msgs[:in.Position], in.Summary)
	if err != nil {
		return ModelTurnOutput{}, err
	}
	budget := messageBudget(in.ContextTokens, offered)
	request, elided := fitContext(sendableArguments(sent), budget)
	if elided > 0 {
		log.Info("older tool outputs elided from the request", "elided", elided, "task", in.TaskID, "step", in.Step, "attempt", in.Attempt)
	}
	out := ModelTurnOutput{Elided: elided, Length: in.Position + 1}
	key := memoKey("turn", in.Transcript, strconv.Itoa(in.Position))
	res, reused, err := a.earlierTurn(ctx, key, msgs, in.Position)
	if err != nil {
		return ModelTurnOutput{}, err
	}
	if reused {
		log.Info("model turn reused from an earlier try", "transcript", in.Transcript, "position", in.Position)
		if in.Position < len(msgs) {
			// Appended already, maybe by an older worker that did not
			// screen calls: what the transcript holds is the turn.
			res.ToolCalls = msgs[in.Position].ToolCalls
		} else {
			res.ToolCalls = llm.ScreenCalls(res.ToolCalls, msgs[:in.Position]) // a memo of an older worker may hold calls unscreened
		}
	} else {
		if requestTokens(request) > budget {
			if to := summarizeTo(msgs[:in.Position], covers); to > 0 {
				log.Info("request over the context budget: older turns to summarize", "to", to, "task", in.TaskID, "step", in.Step, "attempt", in.Attempt)
				return ModelTurnOutput{NeedsSummary: true, SummarizeTo: to, Elided: elided, Length: in.Position}, nil
			}
			log.Warn("request over the context budget with every older turn summarized; sending it", "tokens", requestTokens(request), "budget", budget)
		}
		if res, err = a.turn(ctx, model, key, request, msgs[:in.Position], offered, in.MaxOutputTokens); err != nil {
			return ModelTurnOutput{}, err
		}
		a.countTurn(answered(spec, res.Model), res, offered)
	}
	if err := a.appendMessages(ctx, in.Transcript, in.Position, res.Message()); err != nil {
		return ModelTurnOutput{}, err
	}
	out.Reused, out.StopReason, out.Text = reused, res.StopReason, clip(res.Text, summaryBytes)
	by := answered(spec, res.Model)
	out.Usage = a.callUsage(by, res.Usage)
	out.Model, out.FellBack = by.String(), res.FellBack
	for _, c := range res.ToolCalls {
		s := callSummary(c)
		s.Ask = s.Name != "" && IsMCPTool(s.Name) && a.MCP != nil && a.MCP.Ask(s.Name)
		out.Calls = append(out.Calls, s)
		if c.Name == ToolFinish && c.Problem == "" && out.Finish == nil {
			out.Finish = &FinishArgs{}
			if err := json.Unmarshal([]byte(c.Arguments), out.Finish); err != nil {
				out.Finish = &FinishArgs{} // a half-decoded value would say more than the model did
			}
		}
	}
	return out, nil
}

// countTurn counts a turn the model answered and the calls it made, by
// tool; a call to a tool not offered is "unknown", so the model cannot
// make up label values.
func (a *Activities) countTurn(spec llm.Spec, res llm.TurnResult, offered []llm.Tool) {
	a.countModelCall(spec, res.Usage)
	for _, c := range res.ToolCalls {
		name := "unknown"
		if slices.ContainsFunc(offered, func(t llm.Tool) bool { return t.Name == c.Name }) {
			name = c.Name
		}
		a.metrics().ToolCall(name)
	}
}

// earlierTurn finds the answer an earlier try of this turn got: in the
// memo, or, when the memo was lost, in the transcript itself.
func (a *Activities) earlierTurn(ctx context.Context, key string, msgs []llm.Message, pos int) (llm.TurnResult, bool, error) {
	var res llm.TurnResult
	raw, err := a.Store.GetMemo(ctx, key)
	switch {
	case err == nil:
		if json.Unmarshal(raw, &res) == nil {
			return res, true, nil
		}
	case !errors.Is(err, store.ErrNotFound):
		return res, false, fmt.Errorf("read memo: %w", err)
	}
	if pos < len(msgs) {
		m := msgs[pos]
		if m.Role != llm.RoleAssistant {
			// Asking the model would pay for an answer with nowhere to go.
			return res, false, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("transcript position %d already holds a %s message, not the model's turn", pos, m.Role), ErrTypeTranscriptConflict, nil)
		}
		stop := llm.StopEnd
		if len(m.ToolCalls) > 0 {
			stop = llm.StopToolUse
		}
		return llm.TurnResult{Text: m.Text, ToolCalls: m.ToolCalls, StopReason: stop, Model: m.Model, FellBack: m.FellBack}, true, nil
	}
	return res, false, nil
}

// turn calls the model with the request conv, heartbeating while it waits
// as complete does, and memoizes the answer, its calls screened against the
// whole conversation before it (earlier), before anything uses it.
func (a *Activities) turn(ctx context.Context, model llm.Model, key string, conv, earlier []llm.Message, offered []llm.Tool, maxTokens int) (llm.TurnResult, error) {
	if err := a.checkSpace(ctx); err != nil {
		return llm.TurnResult{}, err
	}
	stop := heartbeatWhile(ctx, ModelCall{Since: time.Now()})
	res, err := model.Turn(ctx, llm.Conversation{Messages: conv}, offered, llm.TurnOptions{MaxTokens: maxTokens, Stream: true})
	stop()
	if err != nil {
		return llm.TurnResult{}, modelError(err)
	}
	// Screened before the memo: a malformed call is answered, not fatal,
	// and over-size arguments are never stored.
	res.ToolCalls = llm.ScreenCalls(res.ToolCalls, earlier)
	raw, err := json.Marshal(res)
	if err != nil {
		return llm.TurnResult{}, fmt.Errorf("encode memo: %w", err)
	}
	// As in complete: the answer is paid for, so a memo the store cannot
	// take is logged, not fatal; the transcript keeps the answer too.
	if err := a.putMemo(ctx, key, raw); err != nil {
		activity.GetLogger(ctx).Warn("model turn not memoized", "error", err)
	}
	return res, nil
}

// commandBytes bounds the command a turn's output repeats.
const commandBytes = 1 << 10

// labelBytes bounds a call's label: one status line.
const labelBytes = 100

// callSummary names a call for the workflow: a run call's command whole
// (within commandBytes), the rest by their label and the start of their
// arguments.
func callSummary(c llm.ToolCall) CallSummary {
	s := CallSummary{ID: c.ID, Name: c.Name, Args: clip(c.Arguments, summaryBytes), Label: CallLabel(c.Name, c.Arguments)}
	if c.Problem != "" {
		s.Name, s.Label = "", "refused "+s.Label
		return s
	}
	switch {
	case c.Name == ToolRun:
		s.Command = approval(callArgs(c.Arguments).Command)
	case c.Name == ToolInstall:
		args := callArgs(c.Arguments)
		cmd := ToolInstall + " " + strings.Join(args.Packages, " ")
		if args.Dev {
			cmd += " (for the tests)"
		}
		s.Command = approval(cmd)
	case IsMCPTool(c.Name):
		// A person asked to approve the call reads its arguments whole,
		// or is told they were cut.
		s.Command = approval(c.Name + " " + c.Arguments)
	}
	return s
}

// approval is a call's command as a person approving it reads it: whole,
// or its head and a notice that it was cut. The notice holds a ';', so a
// cut command never matches an allow rule of --approve-commands (they
// refuse shell metacharacters): what no one was shown, no rule approves.
func approval(text string) string {
	if len(text) <= commandBytes {
		return text
	}
	return truncate.Head(text, commandBytes) + fmt.Sprintf(" … (cut: %d bytes in all; approve only what you have read)", len(text))
}

// labelArgs are the arguments of every tool a label names. Arguments that
// do not decode leave it empty.
type labelArgs struct {
	Path      string   `json:"path"`
	Pattern   string   `json:"pattern"`
	StartLine int      `json:"start_line"`
	EndLine   int      `json:"end_line"`
	Command   string   `json:"command"`
	Packages  []string `json:"packages"`
	Dev       bool     `json:"dev"`
}

func callArgs(args string) labelArgs {
	var a labelArgs
	if json.Unmarshal([]byte(args), &a) != nil {
		return labelArgs{}
	}
	return a
}

// CallLabel says in a few words what a tool call does, for status lines:
// "read app/models.py:10-40", "search TODO in *.py", "run pytest -x
// tests/test_api.py", "edit app/models.py". A call whose arguments do not
// decode is named by its tool.
func CallLabel(name, args string) string {
	a := callArgs(args)
	label := name
	switch name {
	case "read":
		label += " " + a.Path
		if a.StartLine > 0 || a.EndLine > 0 {
			label += fmt.Sprintf(":%d-", max(a.StartLine, 1))
			if a.EndLine > 0 {
				label += strconv.Itoa(a.EndLine)
			}
		}
	case "search":
		label += " " + a.Pattern
		if a.Path != "" {
			label += " in " + a.Path
		}
	case "list":
		if a.Pattern != "" {
			label += " " + a.Pattern
		} else {
			label += " files"
		}
	case "write", "edit", "delete":
		label += " " + a.Path
	case ToolRun:
		label += " " + a.Command
	case ToolRunTests:
		label = "run the tests"
	case ToolInstall:
		label += " " + strings.Join(a.Packages, " ")
	default:
		if IsMCPTool(name) {
			label += " " + args
		}
	}
	label = strings.Join(strings.Fields(label), " ") // one line
	if head := truncate.Head(label, labelBytes); len(head) < len(label) {
		return head + "…"
	}
	return label
}
