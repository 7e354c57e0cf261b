// Package mcp is autocoder's Model Context Protocol server: tools with
// which an IDE, or the model in it, starts a coding task, follows it with
// progress notifications, answers its questions, steers it, rolls it back
// and takes its result as a patch. The tasks are durable Temporal
// workflows: they outlive the MCP session, and any session (or the CLI, or
// the Web UI) picks them up again by id.
//
// The server reaches the tasks only through Tasks, and renders them
// through View: the command line's own code implements both, so a status
// or a transcript reads here as `autocoder status` and `transcript` print
// it.
package mcp

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/workflows"
)

// Tasks is what the tools ask of autocoder's tasks.
type Tasks interface {
	// Start checks the request as `autocoder run` checks its flags,
	// uploads the project, and starts the task; Notes are what run would
	// have said on the way (the language chosen, the files uploaded, whose
	// tests judge).
	Start(ctx context.Context, r StartArgs) (Started, error)
	Status(ctx context.Context, id string) (workflows.Status, error)
	List(ctx context.Context, o taskclient.ListOptions) ([]taskclient.Task, error)
	Transcript(ctx context.Context, id string) ([]taskclient.Conversation, error)
	Approve(ctx context.Context, id string, s workflows.ApproveSignal) error
	Reject(ctx context.Context, id string, s workflows.RejectSignal) error
	Feedback(ctx context.Context, id string, s workflows.FeedbackSignal) error
	Answer(ctx context.Context, id string, a workflows.Answer, text string) error
	Cancel(ctx context.Context, id string, s workflows.CancelSignal) error
	CancelNow(ctx context.Context, id string) error
	Rollback(ctx context.Context, id string, r workflows.RollbackRequest) (workflows.Status, error)
	// Patch is the unified diff of a checkpoint (0: the last passing one,
	// else the last) against the task's input, the user's tests first.
	Patch(ctx context.Context, id string, checkpoint int) (Patch, error)
	// WriteFiles writes a checkpoint's files into dir, all or nothing, as
	// `autocoder resume` writes a finished task's; it returns how many
	// files changed.
	WriteFiles(ctx context.Context, id string, checkpoint int, dir string) (int, error)
}

// Started is a task Start started.
type Started struct {
	ID    string
	URL   string // the task in the Web UI
	Notes string
}

// Patch is a checkpoint's changes as a unified diff.
type Patch struct {
	Checkpoint int
	Diff       string
	// Review names what a person should look at before applying it
	// (integrity findings, safety warnings); empty when nothing.
	Review string
}

// View renders a task for a reader, as the command line does.
type View interface {
	// Status is the task as `autocoder status` prints it.
	Status(id string, st workflows.Status) string
	// Place is one line: phase, step, iteration, turn and tool call.
	Place(st workflows.Status) string
	// Progress is how far the task is, 0 to 1.
	Progress(st workflows.Status) float64
	// Message is one message of a conversation, as `transcript` prints it.
	Message(m llm.Message) string
}

// Options configure the server.
type Options struct {
	Tasks   Tasks
	View    View
	Version string
	// Poll is how often a wait reads the task's status (default 500ms).
	Poll time.Duration
}

// defaultPoll is how often a wait reads the status: the CLI's follow rate.
const defaultPoll = 500 * time.Millisecond

// server holds the tools' dependencies.
type server struct {
	tasks Tasks
	view  View
	poll  time.Duration
}

// New returns the MCP server with autocoder's tools.
func New(o Options) *sdk.Server {
	s := &server{tasks: o.Tasks, view: o.View, poll: o.Poll}
	if s.poll <= 0 {
		s.poll = defaultPoll
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "autocoder", Title: "autocoder", Version: o.Version}, &sdk.ServerOptions{
		Instructions: instructions,
	})
	s.addTools(srv)
	return srv
}

// instructions tell the client's model how the tools fit together.
const instructions = "autocoder runs coding tasks as durable workflows: a task plans, edits and tests code in a " +
	"sandbox until the project's tests pass, and keeps running when this session ends. Start one with " +
	"start_task (wait=true follows it), follow it with wait_task, read it with task_status and " +
	"task_transcript. A task may stop to ask a person (a plan to approve, a command to allow, a budget " +
	"reached): the result says so, with the answers it accepts; relay the question to the user and answer " +
	"with approve_task, reject_task, send_feedback or answer_task. Take the result with get_patch; it " +
	"writes into a directory only when given write_to."

// ServeStdio serves one session over in and out until the client closes
// it or ctx ends.
func ServeStdio(ctx context.Context, srv *sdk.Server, t sdk.Transport) error {
	err := srv.Run(ctx, t)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// HTTPHandler serves the streamable HTTP transport, one session per
// client, to requests that carry "Authorization: Bearer <token>": the
// tools read and write the user's directories, so no other process,
// page or host may call them. Cross-origin browser requests are refused
// too.
func HTTPHandler(srv *sdk.Server, token string) http.Handler {
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	want := []byte("Bearer " + token)
	authorized := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="autocoder mcp"`)
			http.Error(w, "autocoder mcp: send the token `autocoder mcp --listen` printed, as Authorization: Bearer <token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
	return http.NewCrossOriginProtection().Handler(authorized)
}
