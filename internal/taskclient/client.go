// Package taskclient is the one way to reach a coding task: start it, read
// its status, answer its questions, roll it back, list tasks and read its
// conversations. Signal, query and update names and payloads come from
// package workflows; Temporal's errors come back as this package's kinds
// (ErrNotFound, ErrUnreachable, *FailedError, *RejectedError).
//
// It is internal (not a public client/ package) because its callers are
// the CLI and the project's own tests: the workflow's wire names are the
// public interface, documented in the README.
package taskclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

// Kinds of error the client returns; each wraps Temporal's own error.
var (
	// ErrNotFound: no task has the id.
	ErrNotFound = errors.New("task not found")
	// ErrUnreachable: the call got no answer from the server (it is down,
	// the connection broke, the call timed out). It says nothing of the
	// task.
	ErrUnreachable = errors.New("no answer from Temporal")
)

// FailedError is a task that ended without success; Message is the
// workflow's own, written for people (what its status says), and Error
// the whole chain Temporal reports, for those who ask for it.
type FailedError struct {
	Message   string
	Cancelled bool
	err       error
}

func (e *FailedError) Error() string {
	if e.err == nil {
		return e.Message
	}
	return e.err.Error()
}
func (e *FailedError) Unwrap() error { return e.err }

// RejectedError is a request the task refused (a rollback to a checkpoint
// it does not have, or after it ended); Message says why.
type RejectedError struct {
	Op      string // what was refused, e.g. "rollback task autocoder-1"
	Message string
	err     error
}

func (e *RejectedError) Error() string { return e.Op + ": " + e.Message }
func (e *RejectedError) Unwrap() error { return e.err }

// kindError adds one of the kinds above to Temporal's error, keeping its
// message.
type kindError struct {
	kind, err error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// classify turns Temporal's error into this package's kinds. Only a
// workflow that ended, failed a query, refused an update, or does not
// exist, is the task's answer: a server going down fails calls in many
// ways (unavailable, cancelled streams, "transport is closing", refused or
// reset connections), none of which says anything about the task.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var notFound *serviceerror.NotFound
	var ended *temporal.WorkflowExecutionError
	var queryFailed *serviceerror.QueryFailed
	switch {
	case errors.As(err, &notFound):
		return &kindError{ErrNotFound, err}
	case errors.As(err, &ended):
		f := &FailedError{Message: failureMessage(ended), err: err}
		var canceled *temporal.CanceledError
		f.Message = workflows.ClipError(f.Message) // a task recorded before the workflow bounded it
		if errors.As(err, &canceled) {
			f.Cancelled = true
		}
		return f
	case errors.As(err, &queryFailed):
		return err
	}
	return &kindError{ErrUnreachable, err}
}

// failureMessage is the message of the error a task ended with, as the
// workflow put it in its status: the first application error, below the
// activity that failed when one did. Above that activity, Temporal's chain
// repeats the cause once per wrapping, with event ids and retry flags.
func failureMessage(err error) string {
	var act *temporal.ActivityError
	if errors.As(err, &act) && act.Unwrap() != nil {
		err = act.Unwrap()
	}
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// Client reaches coding tasks through a Temporal client it does not own.
type Client struct {
	sdk       client.Client
	namespace string
}

// New wraps c; namespace is c's, which listing and registering search
// attributes name.
func New(c client.Client, namespace string) *Client {
	return &Client{sdk: c, namespace: namespace}
}

// StartOptions tune Start.
type StartOptions struct {
	// ID is the task's id; empty gives "autocoder-", the task's first
	// words and a random suffix (IDFor).
	ID string
	// Dir is the project directory the task works on (absolute), which
	// resume writes the files back to; empty for a task without one.
	Dir string
}

// Started names a task that started.
type Started struct {
	ID    string `json:"id"`
	RunID string `json:"runId"`
}

// Memo keys Start sets, which List (and ProjectDir) read back without
// asking the task.
const (
	memoTask     = "task"
	memoModel    = "model"
	memoLanguage = "language"
	memoDir      = "dir"
)

// Start starts a task. The Web UI shows its summary and details; the memo
// carries what `list` shows.
func (c *Client) Start(ctx context.Context, in workflows.TaskInput, o StartOptions) (Started, error) {
	id := o.ID
	if id == "" {
		id = IDFor(in.Task)
	}
	run, err := c.sdk.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:            id,
		TaskQueue:     workflows.TaskQueue,
		StaticSummary: termsafe.Clip(in.Task, 200),
		StaticDetails: fmt.Sprintf("language: %s\n\ntest command: %s\n\nmax iterations: %d\n\nmodel: %s",
			in.Language, orDefault(in.TestCmd, "written by the model"), in.MaxIterations, orDefault(in.Model, "worker default")),
		Memo: startMemo(in, o),
	}, workflows.WorkflowName, in)
	if err != nil {
		return Started{}, fmt.Errorf("start task: %w", classify(err))
	}
	return Started{ID: id, RunID: run.GetRunID()}, nil
}

func startMemo(in workflows.TaskInput, o StartOptions) map[string]any {
	memo := map[string]any{memoTask: in.Task, memoModel: in.Model, memoLanguage: in.Language}
	if o.Dir != "" {
		memo[memoDir] = o.Dir
	}
	return memo
}

// ProjectDir is the project directory the task was started on (its
// StartOptions.Dir), or "" for a task started without one.
func (c *Client) ProjectDir(ctx context.Context, id string) (string, error) {
	d, err := c.Describe(ctx, id)
	if err != nil {
		return "", err
	}
	return decode[string](d.GetWorkflowExecutionInfo().GetMemo().GetFields()[memoDir]), nil
}

// Status asks the task where it is.
func (c *Client) Status(ctx context.Context, id string) (workflows.Status, error) {
	var st workflows.Status
	v, err := c.sdk.QueryWorkflow(ctx, id, "", workflows.QueryStatus)
	if err != nil {
		return st, classify(err)
	}
	if err := v.Get(&st); err != nil {
		return st, fmt.Errorf("decode status: %w", err)
	}
	return st, nil
}

// Wait waits for the task's result, through any continue-as-new; a task
// that ended without success is a *FailedError.
func (c *Client) Wait(ctx context.Context, id string) (workflows.TaskResult, error) {
	var res workflows.TaskResult
	err := c.sdk.GetWorkflow(ctx, id, "").Get(ctx, &res)
	return res, classify(err)
}

// Approve answers the pending question yes.
func (c *Client) Approve(ctx context.Context, id string, s workflows.ApproveSignal) error {
	return c.signal(ctx, id, workflows.SignalApprove, s)
}

// Reject answers the pending question no; the reason guides the next
// attempt.
func (c *Client) Reject(ctx context.Context, id string, s workflows.RejectSignal) error {
	return c.signal(ctx, id, workflows.SignalReject, s)
}

// Feedback gives the task guidance; the model hears it before its next
// turn.
func (c *Client) Feedback(ctx context.Context, id string, s workflows.FeedbackSignal) error {
	return c.signal(ctx, id, workflows.SignalFeedback, s)
}

// Cancel asks the task to stop after its current step.
func (c *Client) Cancel(ctx context.Context, id string, s workflows.CancelSignal) error {
	return c.signal(ctx, id, workflows.SignalCancel, s)
}

// CancelNow cancels the task through Temporal, interrupting the running
// activity.
func (c *Client) CancelNow(ctx context.Context, id string) error {
	if err := c.sdk.CancelWorkflow(ctx, id, ""); err != nil {
		return fmt.Errorf("cancel task %s: %w", id, classify(err))
	}
	return nil
}

// Answer sends what a typed answer to a pending question means (see
// workflows.Approval.Match); text goes with an answer that takes any text,
// as the reason or guidance.
func (c *Client) Answer(ctx context.Context, id string, a workflows.Answer, text string) error {
	if len(a.Words) > 0 {
		text = ""
	}
	switch a.Signal {
	case workflows.SignalApprove:
		return c.Approve(ctx, id, workflows.ApproveSignal{Comment: text})
	case workflows.SignalReject:
		return c.Reject(ctx, id, workflows.RejectSignal{Reason: text})
	case workflows.SignalFeedback:
		return c.Feedback(ctx, id, workflows.FeedbackSignal{Text: text})
	}
	return fmt.Errorf("the task offers an answer this version cannot send (%s); answer with autocoder approve or reject", a.Signal)
}

func (c *Client) signal(ctx context.Context, id, name string, payload any) error {
	if err := c.sdk.SignalWorkflow(ctx, id, "", name, payload); err != nil {
		return fmt.Errorf("send %s to task %s: %w", name, id, classify(err))
	}
	return nil
}

// Rollback moves a running task back to a checkpoint and returns its
// status once it has; a request the task refuses is a *RejectedError.
func (c *Client) Rollback(ctx context.Context, id string, r workflows.RollbackRequest) (workflows.Status, error) {
	var st workflows.Status
	h, err := c.sdk.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   workflows.UpdateRollback,
		Args:         []any{r},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = h.Get(ctx, &st)
	}
	var app *temporal.ApplicationError
	if err != nil && errors.As(err, &app) {
		return st, &RejectedError{Op: "rollback task " + id, Message: app.Message(), err: err}
	}
	if err != nil {
		return st, fmt.Errorf("rollback task %s: %w", id, classify(err))
	}
	return st, nil
}

// Reachable asks the server whether it serves.
func (c *Client) Reachable(ctx context.Context) error {
	_, err := c.sdk.CheckHealth(ctx, &client.CheckHealthRequest{})
	return err
}

// EnsureSearchAttributes registers the attributes List reads; see the
// function of the same name.
func (c *Client) EnsureSearchAttributes(ctx context.Context) (bool, error) {
	return EnsureSearchAttributes(ctx, c.sdk, c.namespace)
}

// Describe returns what the server knows of the task's current run: its
// state, pending activities and metadata.
func (c *Client) Describe(ctx context.Context, id string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	d, err := c.sdk.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("describe task %s: %w", id, classify(err))
	}
	return d, nil
}

// IDFor is a new id for a task: "autocoder-", the task's first words as a
// slug, and a random suffix ("autocoder-fix-the-rounding-in-3f9a0c1b2d").
// The Web UI's list and `list` show only ids, so the words are what tells
// two tasks apart there; the suffix keeps ids unique.
func IDFor(task string) string {
	if slug := slugOf(task, slugBytes); slug != "" {
		return "autocoder-" + slug + "-" + randomSuffix()
	}
	return "autocoder-" + randomSuffix()
}

// slugBytes bounds an id's words: enough for a few of them, short enough
// that the list's id column and a typed id stay usable.
const slugBytes = 32

// slugOf is task's leading words, lower-case ASCII letters and digits
// joined by "-", cut at a word boundary within max bytes (a single longer
// word is cut). Other characters separate words, so an id needs no escaping
// in a URL or a shell.
func slugOf(task string, max int) string {
	var words []string
	n := 0
	for _, w := range strings.FieldsFunc(strings.ToLower(task), func(r rune) bool {
		return !('a' <= r && r <= 'z' || '0' <= r && r <= '9')
	}) {
		if n > 0 && n+1+len(w) > max {
			break
		}
		if n == 0 && len(w) > max {
			w = w[:max]
		}
		if n > 0 {
			n++
		}
		n += len(w)
		words = append(words, w)
	}
	return strings.Join(words, "-")
}

func randomSuffix() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
