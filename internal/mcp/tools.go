package mcp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

// Tool names, as clients list and call them.
const (
	toolStart      = "start_task"
	toolWait       = "wait_task"
	toolStatus     = "task_status"
	toolList       = "list_tasks"
	toolTranscript = "task_transcript"
	toolApprove    = "approve_task"
	toolReject     = "reject_task"
	toolFeedback   = "send_feedback"
	toolAnswer     = "answer_task"
	toolCancel     = "cancel_task"
	toolRollback   = "rollback_task"
	toolPatch      = "get_patch"
)

// StartArgs are start_task's arguments: `autocoder run`'s options that
// make sense from an IDE.
type StartArgs struct {
	Task            string   `json:"task" jsonschema:"what to build or fix, in plain words, as you would tell a colleague"`
	Dir             string   `json:"dir,omitempty" jsonschema:"absolute path of the project to work on; its files (what git would track) are uploaded and the task works on a copy, never on the directory itself; omit for a task from scratch"`
	TestCmd         string   `json:"test_cmd,omitempty" jsonschema:"shell command whose success decides the task, e.g. 'pytest -q' or 'go test ./...'; default: the project's tests run by the language's test command, else tests the model writes"`
	Language        string   `json:"language,omitempty" jsonschema:"python, go, javascript, typescript, rust, java, ... or auto (default): detected from the project's files and the task's words"`
	Model           string   `json:"model,omitempty" jsonschema:"model as provider:name, e.g. openai:gpt-4.1; default: the one autocoder is configured with"`
	MaxIterations   int      `json:"max_iterations,omitempty" jsonschema:"attempts allowed across all plan steps (default 5)"`
	MaxTurns        int      `json:"max_turns,omitempty" jsonschema:"model turns per attempt before its work is checked (default 30)"`
	BudgetTokens    int      `json:"budget_tokens,omitempty" jsonschema:"stop and ask a person once the task has used this many tokens (0: no limit)"`
	BudgetUSD       float64  `json:"budget_usd,omitempty" jsonschema:"stop and ask a person once the task has cost this many dollars (0: no limit)"`
	ApprovePlan     bool     `json:"approve_plan,omitempty" jsonschema:"wait for a person to approve the plan before any code is written"`
	ApproveCommands bool     `json:"approve_commands,omitempty" jsonschema:"wait for a person before each command the model runs, except those allow_commands covers"`
	AllowCommands   []string `json:"allow_commands,omitempty" jsonschema:"with approve_commands: command prefixes that run without asking, e.g. ['pytest']"`
	Setup           string   `json:"setup,omitempty" jsonschema:"with dir: shell command that prepares the project before the model starts (code generation, fetched files), run once in the sandbox, reaching the network only through the egress proxy; default: sh .autocoder/setup.sh when the project has one"`
	NoSetup         bool     `json:"no_setup,omitempty" jsonschema:"run no setup, not even the project's .autocoder/setup.sh"`
	Policy          string   `json:"policy,omitempty" jsonschema:"what to do with safety findings in the task's code (processes, network, credentials, ...): warn (default: report them), deny (fail the attempt), ask (wait for a person) or allow"`
	Wait            bool     `json:"wait,omitempty" jsonschema:"follow the task, with progress notifications, until it ends or waits for a person (as wait_task does)"`
	MaxWaitSeconds  int      `json:"max_wait_seconds,omitempty" jsonschema:"with wait: return after this many seconds even if the task still runs (default 300); the task goes on"`
}

type idArgs struct {
	ID string `json:"id" jsonschema:"the task's id, as start_task or list_tasks gave it"`
}

type waitArgs struct {
	ID             string `json:"id" jsonschema:"the task's id"`
	MaxWaitSeconds int    `json:"max_wait_seconds,omitempty" jsonschema:"return after this many seconds even if the task still runs (default 300, at most 3600); the task goes on and a new wait_task picks it up"`
}

type listArgs struct {
	Status string `json:"status,omitempty" jsonschema:"only tasks in this state: running, completed, failed, cancelled, terminated or timed-out; default all"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many tasks, newest first (default 20)"`
}

type transcriptArgs struct {
	ID     string `json:"id" jsonschema:"the task's id"`
	Offset int    `json:"offset,omitempty" jsonschema:"the first message to show, counted across the task's conversations from 0; the previous page's result names the next offset"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many messages (default 30, at most 200); a page also stops at about 40 KB of text"`
}

type approveArgs struct {
	ID      string `json:"id" jsonschema:"the task's id"`
	Comment string `json:"comment,omitempty" jsonschema:"an optional note that goes with the approval"`
}

type rejectArgs struct {
	ID     string `json:"id" jsonschema:"the task's id"`
	Reason string `json:"reason" jsonschema:"why: it reaches the model, which tries again with it"`
}

type feedbackArgs struct {
	ID   string `json:"id" jsonschema:"the task's id"`
	Text string `json:"text" jsonschema:"guidance for the model; it hears it before its next turn, waiting or not"`
}

type answerArgs struct {
	ID    string `json:"id" jsonschema:"the task's id"`
	Reply string `json:"reply" jsonschema:"the answer as a person would type it: one of the words the question accepts (e.g. yes, no), or other text where the question takes text"`
}

type cancelArgs struct {
	ID     string `json:"id" jsonschema:"the task's id"`
	Reason string `json:"reason,omitempty" jsonschema:"why, kept in the task's status"`
	Force  bool   `json:"force,omitempty" jsonschema:"stop at once, interrupting the running step; default: stop after the current step, keeping its checkpoint"`
}

type rollbackArgs struct {
	ID         string `json:"id" jsonschema:"the task's id; it must still be running or waiting"`
	Checkpoint int    `json:"checkpoint" jsonschema:"the checkpoint number to go back to (task_status lists them, from 1)"`
	Feedback   string `json:"feedback,omitempty" jsonschema:"guidance for the attempt that continues from there"`
}

type patchArgs struct {
	ID         string `json:"id" jsonschema:"the task's id"`
	Checkpoint int    `json:"checkpoint,omitempty" jsonschema:"the checkpoint to take (default: the last one whose tests passed, else the last)"`
	WriteTo    string `json:"write_to,omitempty" jsonschema:"absolute path of a directory to also write the checkpoint's files into (the project itself if you mean to apply the change); only files that differ are written, all or nothing, and the user's tests are never overwritten; omit to only get the patch"`
}

// Bounds of what the tools return.
const (
	defaultWait        = 5 * time.Minute
	maxWait            = time.Hour
	defaultListLimit   = 20
	maxListLimit       = 200
	defaultPageLimit   = 30
	maxPageLimit       = 200
	pageBytes          = 40 << 10
	patchBytes         = 200 << 10
	listTaskTextBytes  = 120
	statusDetailsBytes = 4000
)

func (s *server) addTools(srv *sdk.Server) {
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	destructive := true
	sdk.AddTool(srv, &sdk.Tool{Name: toolStart, Title: "Start a coding task",
		Description: "Start a coding task: autocoder plans it, then a model edits and tests the code in a sandbox until " +
			"the tests pass (the project's own tests judge and may not be weakened). The task is durable: it keeps " +
			"running after this session ends. Returns the task id at once, or with wait=true follows it with progress " +
			"notifications until it ends or waits for a person (then the result gives the question and how to answer it)."},
		s.start)
	// Not read-only: where the client can ask its user, a wait sends the
	// answer to the task's question.
	sdk.AddTool(srv, &sdk.Tool{Name: toolWait, Title: "Follow a task",
		Description: "Follow a task with progress notifications (phase, plan step, iteration, the model's current tool " +
			"call) until it ends, waits for a person, or max_wait_seconds pass. The result is its status; a waiting " +
			"question comes with the answers it accepts and the tool that sends each."},
		s.wait)
	sdk.AddTool(srv, &sdk.Tool{Name: toolStatus, Title: "Task status", Annotations: readOnly,
		Description: "Where a task is: phase, plan and step, iteration, the model's current turn and tool call, " +
			"checkpoints (with integrity findings and safety warnings), the last test output, tokens and cost, " +
			"and a pending question with the answers it accepts."},
		s.status)
	sdk.AddTool(srv, &sdk.Tool{Name: toolList, Title: "List tasks", Annotations: readOnly,
		Description: "List tasks, newest first: id, state, phase, language, iteration, cost and the task's words."},
		s.list)
	sdk.AddTool(srv, &sdk.Tool{Name: toolTranscript, Title: "Task transcript", Annotations: readOnly,
		Description: "A task's conversations with its model, a page at a time: the model's text, each tool call with its " +
			"arguments and each result (long ones cut to head and tail). The result names the next page's offset."},
		s.transcript)
	sdk.AddTool(srv, &sdk.Tool{Name: toolApprove, Title: "Approve",
		Description: "Answer the task's pending question yes (approve the plan, the command, more budget, ...)."},
		s.approve)
	sdk.AddTool(srv, &sdk.Tool{Name: toolReject, Title: "Reject",
		Description: "Answer the task's pending question no, with a reason the model hears and works from."},
		s.reject)
	sdk.AddTool(srv, &sdk.Tool{Name: toolFeedback, Title: "Send feedback",
		Description: "Give the task guidance: the model hears it before its next turn. At a question that takes " +
			"guidance (a task stuck after its attempts ran out, say) it is the answer."},
		s.feedback)
	sdk.AddTool(srv, &sdk.Tool{Name: toolAnswer, Title: "Answer a question",
		Description: "Answer the task's pending question with a typed reply, as a person would at the terminal: " +
			"one of the words the question accepts (the question lists them), or text where it takes text."},
		s.answer)
	sdk.AddTool(srv, &sdk.Tool{Name: toolCancel, Title: "Cancel a task", Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive},
		Description: "Stop a task after its current step, keeping its checkpoints (force: at once)."},
		s.cancel)
	sdk.AddTool(srv, &sdk.Tool{Name: toolRollback, Title: "Roll back a task", Annotations: &sdk.ToolAnnotations{DestructiveHint: &destructive},
		Description: "Move a running or waiting task back to one of its checkpoints and continue from there, " +
			"optionally with guidance; the attempt being written is abandoned."},
		s.rollback)
	sdk.AddTool(srv, &sdk.Tool{Name: toolPatch, Title: "Get the result as a patch",
		Description: "A task's result as a unified diff against the files it started from (changes to the user's " +
			"tests first, marked), for a checkpoint (default: the last passing one). Nothing is written anywhere " +
			"unless write_to names a directory."},
		s.patch)
}

func (s *server) start(ctx context.Context, req *sdk.CallToolRequest, a StartArgs) (*sdk.CallToolResult, any, error) {
	if req.Params.RequestState != "" {
		// The user answered a question of the task this call started.
		return s.waitAgain(ctx, req, a.MaxWaitSeconds)
	}
	a.Task = strings.TrimSpace(a.Task)
	if a.Task == "" {
		return nil, nil, errors.New("task is empty: say what to build or fix")
	}
	if a.Dir != "" && !filepath.IsAbs(a.Dir) {
		return nil, nil, fmt.Errorf("dir %q is not an absolute path: give the project's absolute path", a.Dir)
	}
	wait, err := waitFor(a.MaxWaitSeconds)
	if err != nil {
		return nil, nil, err
	}
	started, err := s.tasks.Start(ctx, a)
	if err != nil {
		return nil, nil, explain(err, "")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "task %s started\n", started.ID)
	if started.URL != "" {
		fmt.Fprintf(&b, "web UI: %s\n", started.URL)
	}
	if started.Notes != "" {
		b.WriteString(termsafe.Text(strings.TrimRight(started.Notes, "\n")) + "\n")
	}
	if !a.Wait {
		fmt.Fprintf(&b, "follow it with %s {\"id\": %q}", toolWait, started.ID)
		return text(b.String()), nil, nil
	}
	res, err := s.follow(ctx, req, started.ID, wait, "")
	if err != nil || res.InputRequests != nil {
		return res, nil, err
	}
	res.Content = append([]sdk.Content{&sdk.TextContent{Text: b.String()}}, res.Content...)
	return res, nil, nil
}

func (s *server) wait(ctx context.Context, req *sdk.CallToolRequest, a waitArgs) (*sdk.CallToolResult, any, error) {
	if req.Params.RequestState != "" {
		return s.waitAgain(ctx, req, a.MaxWaitSeconds)
	}
	if err := checkID(a.ID); err != nil {
		return nil, nil, err
	}
	wait, err := waitFor(a.MaxWaitSeconds)
	if err != nil {
		return nil, nil, err
	}
	res, err := s.follow(ctx, req, a.ID, wait, "")
	return res, nil, err
}

// waitAgain follows a task again once its user answered the question a
// wait put to them (see askUser).
func (s *server) waitAgain(ctx context.Context, req *sdk.CallToolRequest, seconds int) (*sdk.CallToolResult, any, error) {
	wait, err := waitFor(seconds)
	if err != nil {
		return nil, nil, err
	}
	id, answered, done, err := s.resume(ctx, req)
	if err != nil || done != nil {
		return done, nil, err
	}
	res, err := s.follow(ctx, req, id, wait, answered)
	return res, nil, err
}

// waitFor is max_wait_seconds as a duration, the default for 0.
func waitFor(seconds int) (time.Duration, error) {
	switch {
	case seconds < 0:
		return 0, fmt.Errorf("max_wait_seconds %d is negative: give 1 to %d, or omit it for %d", seconds, int(maxWait.Seconds()), int(defaultWait.Seconds()))
	case seconds == 0:
		return defaultWait, nil
	}
	return min(time.Duration(seconds)*time.Second, maxWait), nil
}

func (s *server) status(ctx context.Context, _ *sdk.CallToolRequest, a idArgs) (*sdk.CallToolResult, any, error) {
	if err := checkID(a.ID); err != nil {
		return nil, nil, err
	}
	st, err := s.tasks.Status(ctx, a.ID)
	if err != nil {
		return nil, nil, explain(err, a.ID)
	}
	return text(s.describe(a.ID, st)), nil, nil
}

// describe is the task's status, its question if one waits, and what to
// do next.
func (s *server) describe(id string, st workflows.Status) string {
	out := termsafe.Text(strings.TrimRight(s.view.Status(id, st), "\n"))
	switch {
	case st.Pending != nil:
		out += "\n\n" + gateText(id, st.Pending)
	case st.Phase == workflows.PhaseSucceeded:
		out += fmt.Sprintf("\n\nthe task succeeded: take its changes with %s {\"id\": %q}", toolPatch, id)
	case st.Phase.Done() && len(st.Checkpoints) > 0:
		out += fmt.Sprintf("\n\nits checkpoints are kept: %s {\"id\": %q, \"checkpoint\": N} shows one", toolPatch, id)
	}
	return out
}

func (s *server) list(ctx context.Context, _ *sdk.CallToolRequest, a listArgs) (*sdk.CallToolResult, any, error) {
	if a.Status != "" && !slices.Contains(taskclient.ListStatuses, a.Status) {
		return nil, nil, fmt.Errorf("status %q is not a task state: give one of %s, or omit it for all", a.Status, strings.Join(taskclient.ListStatuses, ", "))
	}
	if a.Limit < 0 {
		return nil, nil, fmt.Errorf("limit %d is negative: give 1 to %d, or omit it for %d", a.Limit, maxListLimit, defaultListLimit)
	}
	limit := a.Limit
	if limit == 0 {
		limit = defaultListLimit
	}
	tasks, err := s.tasks.List(ctx, taskclient.ListOptions{Status: a.Status, Limit: min(limit, maxListLimit)})
	if err != nil {
		return nil, nil, explain(err, "")
	}
	if len(tasks) == 0 {
		return text("no tasks"), nil, nil
	}
	var b strings.Builder
	for _, t := range tasks {
		fmt.Fprintf(&b, "%s  %s", t.ID, t.Status)
		if t.Phase != "" {
			fmt.Fprintf(&b, "  phase %s", t.Phase)
		}
		if t.Language != "" {
			fmt.Fprintf(&b, "  %s", t.Language)
		}
		if t.Iteration > 0 {
			fmt.Fprintf(&b, "  iteration %d", t.Iteration)
		}
		if t.CostUSD > 0 {
			fmt.Fprintf(&b, "  $%.4f", t.CostUSD)
		}
		fmt.Fprintf(&b, "  started %s\n    %s\n", t.Started.UTC().Format(time.RFC3339), termsafe.Clip(t.Task, listTaskTextBytes))
	}
	return text(b.String()), nil, nil
}

func (s *server) transcript(ctx context.Context, _ *sdk.CallToolRequest, a transcriptArgs) (*sdk.CallToolResult, any, error) {
	if err := checkID(a.ID); err != nil {
		return nil, nil, err
	}
	if a.Offset < 0 || a.Limit < 0 {
		return nil, nil, fmt.Errorf("offset and limit must not be negative (offset %d, limit %d)", a.Offset, a.Limit)
	}
	limit := a.Limit
	if limit == 0 {
		limit = defaultPageLimit
	}
	convs, err := s.tasks.Transcript(ctx, a.ID)
	if err != nil {
		return nil, nil, explain(err, a.ID)
	}
	return text(s.page(a.ID, convs, a.Offset, min(limit, maxPageLimit))), nil, nil
}

// page renders messages offset to offset+limit of the task's
// conversations taken as one list, stopping early past pageBytes, and
// says where the next page starts.
func (s *server) page(id string, convs []taskclient.Conversation, offset, limit int) string {
	total := 0
	for _, c := range convs {
		total += len(c.Messages)
	}
	if total == 0 {
		return fmt.Sprintf("task %s has no conversation yet", id)
	}
	if offset >= total {
		return fmt.Sprintf("task %s has %d messages; offset %d is past the last (give 0 to %d)", id, total, offset, total-1)
	}
	var b strings.Builder
	n, shown, header := 0, 0, ""
	for _, c := range convs {
		for _, m := range c.Messages {
			i := n
			n++
			if i < offset || shown == limit || (shown > 0 && b.Len() >= pageBytes) {
				continue
			}
			if h := fmt.Sprintf("── step %d (conversation %s) ──\n", c.Step, c.ID); h != header {
				header = h
				b.WriteString(h)
			}
			fmt.Fprintf(&b, "[%d] %s\n", i, termsafe.Text(strings.TrimRight(s.view.Message(m), "\n")))
			shown++
		}
	}
	next := offset + shown
	if next < total {
		fmt.Fprintf(&b, "\nmessages %d to %d of %d; the next page: %s {\"id\": %q, \"offset\": %d}", offset, next-1, total, toolTranscript, id, next)
	} else {
		fmt.Fprintf(&b, "\nmessages %d to %d of %d (the last)", offset, next-1, total)
	}
	return b.String()
}

func (s *server) approve(ctx context.Context, _ *sdk.CallToolRequest, a approveArgs) (*sdk.CallToolResult, any, error) {
	return s.answered(ctx, a.ID, "approved", func() error {
		return s.tasks.Approve(ctx, a.ID, workflows.ApproveSignal{Comment: a.Comment})
	})
}

func (s *server) reject(ctx context.Context, _ *sdk.CallToolRequest, a rejectArgs) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(a.Reason) == "" {
		return nil, nil, errors.New("reason is empty: say why, the model works from it")
	}
	return s.answered(ctx, a.ID, "rejected", func() error {
		return s.tasks.Reject(ctx, a.ID, workflows.RejectSignal{Reason: a.Reason})
	})
}

func (s *server) feedback(ctx context.Context, _ *sdk.CallToolRequest, a feedbackArgs) (*sdk.CallToolResult, any, error) {
	if strings.TrimSpace(a.Text) == "" {
		return nil, nil, errors.New("text is empty: give the guidance to send")
	}
	return s.answered(ctx, a.ID, "sent feedback to", func() error {
		return s.tasks.Feedback(ctx, a.ID, workflows.FeedbackSignal{Text: a.Text})
	})
}

func (s *server) answer(ctx context.Context, _ *sdk.CallToolRequest, a answerArgs) (*sdk.CallToolResult, any, error) {
	if err := checkID(a.ID); err != nil {
		return nil, nil, err
	}
	st, err := s.tasks.Status(ctx, a.ID)
	if err != nil {
		return nil, nil, explain(err, a.ID)
	}
	if st.Pending == nil {
		return nil, nil, fmt.Errorf("task %s asks nothing now (phase %s); send guidance with %s", a.ID, st.Phase, toolFeedback)
	}
	ans, ok := st.Pending.Match(a.Reply)
	switch {
	case !ok:
		return nil, nil, fmt.Errorf("%q is not an answer to this question\n\n%s", strings.TrimSpace(a.Reply), gateText(a.ID, st.Pending))
	case ans.Signal == "":
		return nil, nil, fmt.Errorf("%q decides nothing here: %s", strings.TrimSpace(a.Reply), ans.Means)
	}
	return s.answered(ctx, a.ID, "sent "+ans.Signal+" to", func() error {
		return s.tasks.Answer(ctx, a.ID, ans, strings.TrimSpace(a.Reply))
	})
}

// answered sends an answer and says so, with what follows.
func (s *server) answered(ctx context.Context, id, done string, send func() error) (*sdk.CallToolResult, any, error) {
	if err := checkID(id); err != nil {
		return nil, nil, err
	}
	if err := send(); err != nil {
		return nil, nil, explain(err, id)
	}
	return text(fmt.Sprintf("%s task %s; follow it with %s {\"id\": %q}", done, id, toolWait, id)), nil, nil
}

func (s *server) cancel(ctx context.Context, _ *sdk.CallToolRequest, a cancelArgs) (*sdk.CallToolResult, any, error) {
	if err := checkID(a.ID); err != nil {
		return nil, nil, err
	}
	if a.Force {
		if err := s.tasks.CancelNow(ctx, a.ID); err != nil {
			return nil, nil, explain(err, a.ID)
		}
		return text(fmt.Sprintf("cancelled task %s at once; its checkpoints are kept", a.ID)), nil, nil
	}
	if err := s.tasks.Cancel(ctx, a.ID, workflows.CancelSignal{Reason: a.Reason}); err != nil {
		return nil, nil, explain(err, a.ID)
	}
	return text(fmt.Sprintf("task %s stops after its current step, keeping its checkpoints", a.ID)), nil, nil
}

func (s *server) rollback(ctx context.Context, _ *sdk.CallToolRequest, a rollbackArgs) (*sdk.CallToolResult, any, error) {
	if err := checkID(a.ID); err != nil {
		return nil, nil, err
	}
	if a.Checkpoint < 1 {
		return nil, nil, fmt.Errorf("checkpoint %d: give a checkpoint number from 1 (%s lists them)", a.Checkpoint, toolStatus)
	}
	st, err := s.tasks.Rollback(ctx, a.ID, workflows.RollbackRequest{Checkpoint: a.Checkpoint, Feedback: a.Feedback})
	if err != nil {
		return nil, nil, explain(err, a.ID)
	}
	return text(fmt.Sprintf("task %s rolled back to checkpoint %d and continues\n\n%s", a.ID, a.Checkpoint, s.describe(a.ID, st))), nil, nil
}

func (s *server) patch(ctx context.Context, _ *sdk.CallToolRequest, a patchArgs) (*sdk.CallToolResult, any, error) {
	if err := checkID(a.ID); err != nil {
		return nil, nil, err
	}
	if a.Checkpoint < 0 {
		return nil, nil, fmt.Errorf("checkpoint %d is negative: give a checkpoint number from 1, or omit it", a.Checkpoint)
	}
	if a.WriteTo != "" && !filepath.IsAbs(a.WriteTo) {
		return nil, nil, fmt.Errorf("write_to %q is not an absolute path: give the directory's absolute path", a.WriteTo)
	}
	p, err := s.tasks.Patch(ctx, a.ID, a.Checkpoint)
	if err != nil {
		return nil, nil, explain(err, a.ID)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "checkpoint #%d of task %s", p.Checkpoint, a.ID)
	if a.WriteTo != "" {
		n, err := s.tasks.WriteFiles(ctx, a.ID, p.Checkpoint, a.WriteTo)
		if err != nil {
			return nil, nil, explain(err, a.ID)
		}
		fmt.Fprintf(&b, "; wrote %d changed file(s) to %s", n, a.WriteTo)
	}
	b.WriteString("\n")
	if p.Review != "" {
		b.WriteString(termsafe.Text(strings.TrimRight(p.Review, "\n")) + "\n")
	}
	switch diff := p.Diff; {
	case diff == "":
		b.WriteString("no changes against the input")
	case len(diff) > patchBytes:
		fmt.Fprintf(&b, "the patch is %d bytes; its first %d follow (autocoder export %s --patch prints it whole)\n%s", len(diff), patchBytes, a.ID, termsafe.Text(diff[:patchBytes]))
	default:
		b.WriteString(termsafe.Text(diff))
	}
	return text(b.String()), nil, nil
}

// checkID refuses an empty id before it reaches the server, whose answer
// would not say what was wrong.
func checkID(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("id is empty: give a task id (%s shows them)", toolList)
	}
	return nil
}

// explain words an error for the model: what went wrong and what to do.
func explain(err error, id string) error {
	var failed *taskclient.FailedError
	var rejected *taskclient.RejectedError
	var msg string
	switch {
	case errors.Is(err, taskclient.ErrNotFound) && id != "":
		msg = fmt.Sprintf("no task %s here; %s shows the tasks there are", id, toolList)
	case errors.As(err, &rejected):
		msg = rejected.Message
	case errors.As(err, &failed):
		msg = "the task ended: " + failed.Message
	case errors.Is(err, taskclient.ErrUnreachable):
		msg = fmt.Sprintf("no answer from Temporal (%v); the task may still be running: try again", err)
	default:
		msg = err.Error()
	}
	return errors.New(termsafe.Text(msg))
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}
