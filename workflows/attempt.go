package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
)

// DefaultMaxTurns bounds an attempt's model turns when the task sets none.
const DefaultMaxTurns = 30

// attempt runs one iteration of the current plan step: the model works
// through tools, turn by turn, until it finishes; then the step's check
// judges the workspace and the attempt is checkpointed. A retry continues
// the step's conversation with the failure, so the model sees its own
// earlier work. A model without tool calling answers in fenced blocks.
func (t *task) attempt(ctx workflow.Context) error {
	if t.Fenced {
		t.Status.Iteration++
		return t.fencedAttempt(ctx)
	}
	if !t.Conversation.Working { // else a continued run resumes it
		t.Status.Iteration++
		if err := t.startAttempt(ctx); err != nil {
			return err
		}
	}
	end, err := t.turns(ctx)
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Type() == activities.ErrTypeNoToolCalling {
		workflow.GetLogger(ctx).Info("the model cannot call tools; attempts ask for fenced file blocks", "error", app.Message())
		t.Fenced = true
		t.endAttempt()
		t.Status.Turn = 0
		return t.fencedAttempt(ctx)
	}
	if err != nil || end == nil {
		return err
	}
	snapshot := t.Conversation.Snapshot
	if stop, err := t.interrupted(ctx, snapshot); stop {
		return err
	}
	t.endAttempt()
	result, err := t.check(ctx, snapshot, end.rejected, end.finish.Tests)
	if err != nil {
		return err
	}
	return t.judged(ctx, snapshot, result, end.finish.Summary)
}

// attemptEnd is how an attempt's turns ended.
type attemptEnd struct {
	finish activities.FinishArgs // what the finish call said, if any
	// rejected says why a final answer's file blocks could not be used.
	rejected string
}

// startAttempt opens the step's conversation, or tells the open one why
// the last attempt failed, and sets the attempt going from the task's
// base snapshot.
func (t *task) startAttempt(ctx workflow.Context) error {
	c := &t.Conversation
	t.Status.Turn = 0
	phase := PhaseGenerating
	if t.ReflectOn != nil {
		phase = PhaseReflecting // the model starts from its failure
	}
	t.setPhase(ctx, phase)
	if c.Transcript == "" || c.Step != t.Status.Step {
		if err := t.openStep(ctx); err != nil {
			return err
		}
	} else if t.ReflectOn != nil || len(t.Status.Feedback) > c.Guided {
		msg := llm.Message{Role: llm.RoleUser, Text: retryMessage(t.ReflectOn, t.Memory.FailureLessons, t.Status.Feedback[c.Guided:])}
		if err := t.appendMessages(ctx, t.label("report the failure to"), msg); err != nil {
			return err
		}
		c.Guided = len(t.Status.Feedback)
	}
	t.ReflectOn = nil
	c.Working, c.Snapshot = true, t.Base
	return nil
}

// openStep starts a conversation for the step: the system prompt and the
// first message, with the project's instructions, lessons, guidance and
// repository map.
func (t *task) openStep(ctx workflow.Context) error {
	id := fmt.Sprintf("%s/%d", workflow.GetInfo(ctx).WorkflowExecution.ID, len(t.Status.Transcripts)+1)
	t.Conversation = Conversation{Transcript: id, Step: t.Status.Step, Guided: len(t.Status.Feedback)}
	t.Status.Transcripts = append(t.Status.Transcripts, TranscriptRef{ID: id, Step: t.Status.Step})
	in := activities.OpenStepInput{
		Transcript: id, Task: t.in.Task, Language: t.in.Language, TestCmd: t.in.TestCmd,
		Plan: t.Status.Plan, Step: t.Status.Step, Snapshot: t.Base,
		Lessons: t.Memory.TaskLessons + t.Memory.FailureLessons, Guidance: t.Status.Feedback,
	}
	if f := t.ReflectOn; f != nil {
		in.Failure = failureReport(*f)
	}
	t.doing(ctx, "read the project")
	var out activities.OpenStepOutput
	if err := workflow.ExecuteActivity(storeCtx(ctx, t.label("open")), a.OpenStep, in).Get(ctx, &out); err != nil {
		return fmt.Errorf("open step %d: %w", t.Status.Step, err)
	}
	t.Conversation.Length = out.Length
	for _, f := range out.Instructions {
		if !slices.Contains(t.Status.Instructions, f) {
			t.Status.Instructions = append(t.Status.Instructions, f)
		}
	}
	return nil
}

// versionGuidanceBetweenTurns guards passing guidance on between turns: a
// run recorded before it (workflows/testdata, all but
// guidance_between_turns) told the next attempt instead, and replays
// through DefaultVersion. Retirement: once no run started before the change
// is open or retained by the namespace, the DefaultVersion branch and
// those histories go, and the GetVersion call stays with 1 as its minimum.
const versionGuidanceBetweenTurns = "guidance-between-turns"

// passOnGuidance tells the model, before its next turn, what people said
// since it last heard from them, so feedback steers the attempt under way
// rather than the next one.
func (t *task) passOnGuidance(ctx workflow.Context) error {
	c := &t.Conversation
	if len(t.Status.Feedback) <= c.Guided {
		return nil
	}
	// Histories from before this change told the next attempt instead.
	if workflow.GetVersion(ctx, versionGuidanceBetweenTurns, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	msg := llm.Message{Role: llm.RoleUser, Text: retryMessage(nil, "", t.Status.Feedback[c.Guided:])}
	if err := t.appendMessages(ctx, t.turnLabel("pass on guidance"), msg); err != nil {
		return err
	}
	c.Guided = len(t.Status.Feedback)
	return nil
}

// retryMessage tells the model why its last attempt failed, if it did,
// with the lessons of failures like it, and what people have said since it
// last heard from them.
func retryMessage(failure *activities.TestSummary, lessons string, guidance []string) string {
	var b strings.Builder
	if failure != nil {
		b.WriteString(failureReport(*failure) + "\n")
		if lessons != "" {
			b.WriteString("Lessons from similar failures:\n" + lessons + "\n")
		}
	}
	if len(guidance) > 0 {
		b.WriteString("A person says:\n")
		for _, g := range guidance {
			b.WriteString("- " + g + "\n")
		}
		b.WriteString("\n")
	}
	if failure != nil {
		b.WriteString("Fix it; call finish when done.")
	} else {
		b.WriteString("Go on with this in mind; call finish when done.")
	}
	return b.String()
}

// RetryMarker starts the message that tells the model its work failed
// the check: what a scripted model keys its fix on.
const RetryMarker = "The check of your work failed"

// failureReport describes a failed check for the model.
func failureReport(f activities.TestSummary) string {
	var b strings.Builder
	b.WriteString(RetryMarker + ": " + f.Headline() + ".\n")
	if out := strings.TrimSpace(f.Output); out != "" {
		b.WriteString("\n" + out + "\n")
	}
	if len(f.Findings) > 0 {
		b.WriteString("\nYour changes touched the user's tests, which judge the work as they were:\n")
		for _, fd := range f.Findings {
			b.WriteString("- " + fd.String() + "\n")
		}
		if f.Restored != "" {
			b.WriteString("They are put back as they were in your workspace.\n")
		}
	}
	return b.String()
}

// interrupted acts on a cancel or rollback that came while the attempt
// worked on snapshot, and reports whether the attempt stops: cancelled,
// it is checkpointed untested and the task ends; moved back by a
// rollback, it is abandoned and does not count.
func (t *task) interrupted(ctx workflow.Context, snapshot string) (bool, error) {
	switch {
	case t.Cancel != nil:
		t.checkpoint(ctx, snapshot, activities.TestSummary{Stage: "generate", ExitCode: -1, Output: "cancelled before testing"})
		return true, t.cancelled()
	case t.rollback != nil:
		t.Status.Iteration--
		t.endAttempt()
		return true, nil
	}
	return false, nil
}

// endAttempt leaves the conversation open for a retry, with no attempt
// under way.
func (t *task) endAttempt() {
	t.Conversation.Working, t.Conversation.Snapshot = false, ""
	t.Status.Doing = ""
}

// turns runs the model's turns until it finishes, answers without calling
// a tool, or runs out of turns. Between turns a cancel stops the task, a
// rollback abandons the attempt (nil end) and a long history continues the
// task as new, which resumes here.
func (t *task) turns(ctx workflow.Context) (*attemptEnd, error) {
	c := &t.Conversation
	for {
		if stop, err := t.interrupted(ctx, c.Snapshot); stop {
			return nil, err
		}
		if t.Status.Turn >= t.maxTurns() {
			workflow.GetLogger(ctx).Info("attempt out of turns; checking its work", "turns", t.Status.Turn)
			return &attemptEnd{}, nil
		}
		if t.historyFull(ctx) {
			return nil, t.continueAsNew(ctx)
		}
		if err := t.passOnGuidance(ctx); err != nil {
			return nil, err
		}
		turn, err := t.modelTurn(ctx)
		if err != nil || turn == nil {
			return &attemptEnd{}, err
		}
		// A cancel or rollback that came while the model thought stops the
		// attempt before its calls run: the conversation is not continued.
		if stop, err := t.interrupted(ctx, c.Snapshot); stop {
			return nil, err
		}
		if len(turn.Calls) == 0 {
			return t.applyAnswer(ctx)
		}
		finished, err := t.route(ctx, turn.Calls)
		if err != nil {
			return nil, err
		}
		if finished {
			end := &attemptEnd{}
			if turn.Finish != nil {
				end.finish = *turn.Finish
			}
			return end, nil
		}
	}
}

// models names the task's model and its fallback chain as the model
// activities take it: "provider:model,provider:model".
func (t *task) models() string {
	if len(t.in.Fallback) == 0 {
		return t.in.Model
	}
	return strings.Join(append([]string{t.in.Model}, t.in.Fallback...), llm.ChainSeparator)
}

func (t *task) maxTurns() int {
	if n := t.in.Agent.MaxTurns; n > 0 {
		return n
	}
	return DefaultMaxTurns
}

// modelTurn asks for the model's next turn and pays for it. A conversation
// past the context budget has its older turns summarized first; if even
// that does not fit, the attempt ends (nil turn) and its work is checked.
func (t *task) modelTurn(ctx workflow.Context) (*activities.ModelTurnOutput, error) {
	c := &t.Conversation
	t.Status.Turn++
	summarizedTo := 0
	for {
		t.doing(ctx, "waiting for the model")
		var out activities.ModelTurnOutput
		err := workflow.ExecuteActivity(modelCtx(ctx, t.turnLabel("model turn")), a.ModelTurn, activities.ModelTurnInput{
			Transcript: c.Transcript, Position: c.Length, Tools: activities.ToolSetAgent, Model: t.models(), Language: t.in.Language,
			MaxOutputTokens: t.in.Agent.MaxOutputTokens, ContextTokens: t.in.Agent.ContextTokens, Summary: c.Summary,
			TaskID: workflow.GetInfo(ctx).WorkflowExecution.ID, Step: t.Status.Step, Attempt: t.Status.Iteration,
		}).Get(ctx, &out)
		if err != nil {
			return nil, fmt.Errorf("model turn: %w", err)
		}
		if !out.NeedsSummary {
			c.Length = out.Length
			if out.Model != "" {
				t.Status.Model, t.Status.FellBack = out.Model, out.FellBack
			}
			return &out, t.spend(ctx, out.Usage)
		}
		// ModelTurn asks for summaries reaching further each time (the
		// latest turn's start, then the end); one that does not is a
		// conversation no summary can make fit.
		if out.SummarizeTo <= summarizedTo {
			workflow.GetLogger(ctx).Warn("the conversation does not fit the context budget even summarized; checking the attempt's work")
			return nil, nil
		}
		summarizedTo = out.SummarizeTo
		if err := t.summarize(ctx, out.SummarizeTo); err != nil {
			return nil, err
		}
	}
}

// summarize replaces the conversation's older turns with a summary.
func (t *task) summarize(ctx workflow.Context, to int) error {
	c := &t.Conversation
	t.doing(ctx, "summarize older turns")
	var out activities.SummarizeOutput
	err := workflow.ExecuteActivity(modelCtx(ctx, t.label("summarize")), a.Summarize, activities.SummarizeInput{
		Transcript: c.Transcript, Position: to, Model: t.models(), Previous: c.Summary,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("summarize: %w", err)
	}
	c.Summary = &out.Summary
	return t.spend(ctx, out.Usage)
}

// route gives each of a turn's calls its one result, in the model's order:
// runs of workspace tools (and unknown names, which get an error result)
// go to RunTools, sandbox calls to the sandbox, a finish is acknowledged.
// It reports whether the model finished.
func (t *task) route(ctx workflow.Context, calls []activities.CallSummary) (finished bool, err error) {
	r := routes{mcp: t.routesMCP(ctx, calls), install: t.routesInstall(ctx, calls)}
	for i := 0; i < len(calls); {
		switch call := calls[i]; {
		case r.sandbox(call.Name):
			err = t.sandboxCall(ctx, call)
			i++
		case r.mcp && activities.IsMCPTool(call.Name):
			err = t.mcpCall(ctx, call)
			i++
		case call.Name == activities.ToolFinish:
			t.doing(ctx, "finish")
			err = t.appendResult(ctx, call, "finished", false)
			finished = true
			i++
		default:
			j := i + 1
			for j < len(calls) && !r.elsewhere(calls[j].Name) {
				j++
			}
			err = t.runTools(ctx, calls[i:j])
			i = j
		}
		if err != nil {
			return false, err
		}
	}
	return finished, nil
}

// routes says which of a turn's calls go to activities of their own
// rather than to RunTools, beyond run, run_tests and finish: MCP tools'
// and install's, each where its version says so.
type routes struct{ mcp, install bool }

// sandbox reports a call SandboxCall runs.
func (r routes) sandbox(name string) bool {
	return name == activities.ToolRun || name == activities.ToolRunTests || r.install && name == activities.ToolInstall
}

// elsewhere reports a call that does not go to RunTools.
func (r routes) elsewhere(name string) bool {
	return r.sandbox(name) || name == activities.ToolFinish || r.mcp && activities.IsMCPTool(name)
}

// versionInstallTool guards routing install calls to SandboxCall: runs
// recorded before it were never offered the tool, and a call by that name
// went to RunTools, which answered it as unknown; they replay through
// DefaultVersion. The version is asked only for a turn with such a call.
// Retirement: once no run started before the change is open or retained
// by the namespace, the DefaultVersion branch goes, and the GetVersion
// call stays with 1 as its minimum.
const versionInstallTool = "install-tool"

// routesInstall says whether the turn's install calls go to SandboxCall.
func (t *task) routesInstall(ctx workflow.Context, calls []activities.CallSummary) bool {
	if !slices.ContainsFunc(calls, func(c activities.CallSummary) bool { return c.Name == activities.ToolInstall }) {
		return false
	}
	return workflow.GetVersion(ctx, versionInstallTool, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// versionMCPTools guards routing calls of MCP tools (mcp__<server>__<tool>)
// to MCPCall: runs recorded before it were never offered those tools, and
// a call by such a name went to RunTools, which answered it as unknown;
// they replay through DefaultVersion. The version is asked only for a turn
// with such a call. Retirement: once no run started before the change is
// open or retained by the namespace, the DefaultVersion branch goes, and
// the GetVersion call stays with 1 as its minimum.
const versionMCPTools = "mcp-tools"

// routesMCP says whether the turn's MCP calls go to MCPCall.
func (t *task) routesMCP(ctx workflow.Context, calls []activities.CallSummary) bool {
	if !slices.ContainsFunc(calls, func(c activities.CallSummary) bool { return activities.IsMCPTool(c.Name) }) {
		return false
	}
	return workflow.GetVersion(ctx, versionMCPTools, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// mcpCall calls a tool of one of the user's MCP servers. When the server's
// entry asks, or with ApproveCommands, the call waits for a person first;
// declined, the model is told so instead.
func (t *task) mcpCall(ctx workflow.Context, call activities.CallSummary) error {
	if call.Ask || t.in.ApproveCommands {
		if ok, err := t.approved(ctx, call, "Call this MCP tool?", orText(call.Command, describeCall(call)), "a person declined this call: "); !ok {
			return err
		}
	}
	c := &t.Conversation
	doing := describeCall(call)
	t.doing(ctx, doing)
	var out activities.MCPCallOutput
	err := workflow.ExecuteActivity(mcpCtx(ctx, t.turnLabel(doing)), a.MCPCall, activities.MCPCallInput{
		Transcript: c.Transcript, Position: c.Length, CallID: call.ID,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("%s: %w", call.Name, err)
	}
	c.Length = out.Length
	return nil
}

// approved asks a person at the command gate before a call runs. Declined,
// the model is told so instead (declined, then the person's reason) and
// ok is false.
func (t *task) approved(ctx workflow.Context, call activities.CallSummary, question, shown, declined string) (ok bool, err error) {
	d, err := t.ask(ctx, GateCommand, question, shown)
	if err != nil {
		return false, err
	}
	if d.approved {
		return true, nil
	}
	return false, t.appendResult(ctx, call, declined+orText(d.text, "no reason given"), true)
}

// runTools runs workspace tool calls as one local activity.
func (t *task) runTools(ctx workflow.Context, calls []activities.CallSummary) error {
	c := &t.Conversation
	ids := make([]string, len(calls))
	for i, call := range calls {
		ids[i] = call.ID
	}
	doing := describeCalls(calls)
	t.doing(ctx, doing)
	var out activities.RunToolsOutput
	err := workflow.ExecuteLocalActivity(toolsCtx(ctx, t.turnLabel(doing)), a.RunTools, activities.RunToolsInput{
		Transcript: c.Transcript, Position: c.Length, Snapshot: c.Snapshot, CallIDs: ids,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("run tools: %w", err)
	}
	c.Snapshot, c.Length = out.Snapshot, out.Length
	return nil
}

// sandboxCall runs a run, run_tests or install call in the sandbox, on
// the workspace as the calls before it left it. With ApproveCommands, a
// command the allow-list does not cover, and every install (it reaches a
// registry), waits for a person; declined, the model is told so instead.
func (t *task) sandboxCall(ctx workflow.Context, call activities.CallSummary) error {
	switch {
	case !t.in.ApproveCommands:
	case call.Name == activities.ToolRun && !commandAllowed(call.Command, t.in.CommandAllow):
		if ok, err := t.approved(ctx, call, "Run this command?", call.Command, "a person declined to run this: "); !ok {
			return err
		}
	case call.Name == activities.ToolInstall:
		if ok, err := t.approved(ctx, call, "Install these packages from the registry?", call.Command, "a person declined this install: "); !ok {
			return err
		}
	}
	c := &t.Conversation
	doing := describeCall(call)
	t.doing(ctx, doing)
	var out activities.SandboxCallOutput
	err := workflow.ExecuteActivity(sandboxCtx(ctx, t.turnLabel(doing)), a.SandboxCall, activities.SandboxCallInput{
		Transcript: c.Transcript, Position: c.Length, CallID: call.ID, Snapshot: c.Snapshot, Language: t.in.Language,
		TestCmd: t.in.TestCmd, InputSnapshot: t.start(), Protect: t.in.Protect, AllowTestEdits: t.in.AllowTestEdits,
		OutputBytes: t.in.Agent.ToolOutputBytes,
	}).Get(ctx, &out)
	if err != nil {
		return fmt.Errorf("%s: %w", call.Name, err)
	}
	c.Snapshot, c.Length = out.Snapshot, out.Length
	return nil
}

// commandAllowed reports whether a command starts with one of the allowed
// prefixes, at a word boundary ("go test" allows "go test ./..." but not
// "go tester"; "./scripts/" allows "./scripts/lint.sh"). A command that chains or redirects is never covered: the
// prefix would speak for only its first part.
func commandAllowed(command string, allow []string) bool {
	command = strings.TrimSpace(command)
	if strings.ContainsAny(command, ";&|`$<>\n") {
		return false
	}
	for _, p := range allow {
		p = strings.TrimSpace(p)
		if p == "" || !strings.HasPrefix(command, p) {
			continue
		}
		if rest := command[len(p):]; rest == "" || rest[0] == ' ' || rest[0] == '\t' || !isWordByte(p[len(p)-1]) {
			return true
		}
	}
	return false
}

func isWordByte(b byte) bool {
	return b == '_' || b == '-' || b == '.' || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}

// appendResult answers a call without running it.
func (t *task) appendResult(ctx workflow.Context, call activities.CallSummary, text string, isError bool) error {
	return t.appendMessages(ctx, t.turnLabel(call.Name), llm.Message{Role: llm.RoleTool,
		Result: &llm.ToolResult{CallID: call.ID, Name: call.Name, Content: text, IsError: isError}})
}

// appendMessages adds messages the workflow writes to the conversation.
func (t *task) appendMessages(ctx workflow.Context, summary string, msgs ...llm.Message) error {
	c := &t.Conversation
	var n int
	err := workflow.ExecuteActivity(storeCtx(ctx, summary), a.AppendMessages, activities.AppendMessagesInput{
		Transcript: c.Transcript, Position: c.Length, Messages: msgs,
	}).Get(ctx, &n)
	if err != nil {
		return fmt.Errorf("append to the conversation: %w", err)
	}
	c.Length = n
	return nil
}

// applyAnswer ends an attempt whose model answered without calling a tool:
// the files of its fenced blocks, if any, are applied.
func (t *task) applyAnswer(ctx workflow.Context) (*attemptEnd, error) {
	c := &t.Conversation
	t.doing(ctx, "apply the answer's files")
	var out activities.ApplyAnswerOutput
	err := workflow.ExecuteActivity(storeCtx(ctx, t.turnLabel("apply the answer")), a.ApplyAnswer, activities.ApplyAnswerInput{
		Transcript: c.Transcript, Position: c.Length - 1, Snapshot: c.Snapshot,
	}).Get(ctx, &out)
	if err != nil {
		return nil, fmt.Errorf("apply the answer: %w", err)
	}
	c.Snapshot = out.Snapshot
	return &attemptEnd{rejected: out.Rejected}, nil
}

// describeCall names a call for status and the Web UI: the label the
// turn gave it ("read app/models.py", "run pytest -x tests/test_api.py").
func describeCall(call activities.CallSummary) string {
	if call.Label != "" {
		return call.Label
	}
	return call.Name
}

// callsLabelBytes bounds the label of a run of calls: it is the RunTools
// activity's summary in the Web UI and status's "doing", one line each,
// and a turn may make dozens of calls.
const callsLabelBytes = 200

// describeCalls names a run of calls, "read app/models.py, edit
// app/models.py", as many as fit in callsLabelBytes (always the first),
// then how many more.
func describeCalls(calls []activities.CallSummary) string {
	var b strings.Builder
	for i, call := range calls {
		label := describeCall(call)
		more := ""
		if rest := len(calls) - i - 1; rest > 0 {
			more = fmt.Sprintf(" and %d more", rest)
		}
		if i > 0 && b.Len()+len(", ")+len(label)+len(more) > callsLabelBytes {
			b.WriteString(fmt.Sprintf(" and %d more", len(calls)-i))
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(label)
	}
	return b.String()
}

// doing records what the attempt is doing now, for status and the Web UI.
func (t *task) doing(ctx workflow.Context, what string) {
	t.Status.Doing = what
	t.showDetails(ctx)
}

// turnLabel names a turn's activity for the Web UI, with the model that
// answered the turn before when it was a fallback.
func (t *task) turnLabel(what string) string {
	label := fmt.Sprintf("%s — step %d attempt %d turn %d", what, t.Status.Step, t.Status.Iteration, t.Status.Turn)
	if t.Status.FellBack != "" {
		label += fmt.Sprintf(" (last answered by %s, fell back from %s)", t.Status.Model, t.Status.FellBack)
	}
	return label
}

// judged checkpoints an attempt's check and moves on: to the next step
// after a pass, or to a retry that hears of the failure. summary is what
// the model said of its work, kept with a verified fix.
func (t *task) judged(ctx workflow.Context, snapshot string, result activities.TestSummary, summary string) error {
	lessons := result.Lessons
	result.Lessons = nil // for the retry's prompt, not the task's record
	t.checkpoint(ctx, snapshot, result)
	if err := t.stopIfCancelled(); err != nil {
		return err
	}
	if snapshot != "" {
		t.Base = snapshot
	}
	t.restoreUsersTests(result)
	if result.Passed {
		if p := t.Memory.Pending; p != nil {
			p.PassedSnapshot = snapshot
			if summary != "" {
				p.Reflection = summary
			}
			t.Memory.Fixes = append(t.Memory.Fixes, *p)
			t.Memory.Pending = nil
		}
		t.Memory.FailureLessons = ""
		t.Status.Step++
		t.Reflection = ""
		return nil
	}
	t.Memory.Failed = true
	t.Memory.FailedChecks++ // before this failure's lessons are recalled
	if t.rollback != nil {
		return nil // the failure no longer matters: the loop moves back
	}
	t.ReflectOn = &result
	t.Memory.Pending = &activities.Fix{FailedSnapshot: t.Base, FailureOutput: result.Output}
	t.Memory.FailureLessons = ""
	if lessons != nil {
		t.Memory.FailureLessons = t.useLessons(*lessons)
	}
	t.noLessonFrom(result)
	return nil
}

// check judges a snapshot: the last plan step by the task's whole test
// command, earlier steps by the language's compile check and the tests
// the step named when it finished. Validation and tests run in one
// activity. In ask mode, safety findings wait for a person: approved code
// runs, rejected code fails. A model answer that could not be applied
// (rejected) fails without a check.
func (t *task) check(ctx workflow.Context, snapshot, rejected string, tests []string) (activities.TestSummary, error) {
	if rejected != "" {
		return activities.TestSummary{Stage: "generate", ExitCode: 1, Output: rejected}, nil
	}
	in := activities.CheckInput{
		SnapshotID: snapshot, Language: t.in.Language, TestCmd: t.in.TestCmd,
		Allow: t.in.Allow, IgnorePolicy: t.in.Policy == PolicyAllow, Warn: t.in.Policy == PolicyWarn, Scope: activities.ScopeAll,
		RecallLessons: !t.Fenced, // a fenced attempt's Generate recalls them as it reflects
	}
	if t.Status.Step < len(t.Status.Plan) {
		in.Scope, in.Tests = activities.ScopeStep, tests
	}
	t.protectTests(&in)

	var result activities.TestSummary
	t.setPhase(ctx, PhaseChecking)
	if err := workflow.ExecuteActivity(sandboxCtx(ctx, t.label("validate and test")), a.Check, in).Get(ctx, &result); err != nil {
		return result, fmt.Errorf("check: %w", err)
	}
	t.noteFindings(result)
	if result.Stage != "validate" || result.Passed {
		return result, nil // validated and tested
	}
	if !result.PolicyOnly || t.in.Policy != PolicyAsk {
		return result, nil
	}
	d, err := t.ask(ctx, GatePolicy, "The code does things the safety policy denies. Run it anyway?", result.Output)
	if err != nil {
		return result, err
	}
	if !d.approved {
		if d.text != "" {
			result.Output += "\nRejected by a person: " + d.text
		}
		return result, nil
	}
	if t.Cancel != nil || t.rollback != nil {
		return activities.TestSummary{Stage: "validate", ExitCode: -1, Output: "not tested: interrupted"}, nil
	}
	t.setPhase(ctx, PhaseExecuting)
	if err := workflow.ExecuteActivity(sandboxCtx(ctx, t.label("test")), a.Execute, in).Get(ctx, &result); err != nil {
		return result, fmt.Errorf("execute: %w", err)
	}
	t.noteFindings(result)
	return result, nil
}
