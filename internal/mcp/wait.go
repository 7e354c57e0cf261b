package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/truncate"
	"github.com/autocoder/autocoder/workflows"
)

// follow reads the task's status until it ends, waits for a person, or
// wait passes, sending a progress notification whenever its place changes
// (when the client asked for them with a progress token). A question ends
// the wait: as a result that names the answers and their tools, or, when
// the client can ask its user (elicitation), as the question put to the
// user, after which the tool runs again with the answer (resume) and the
// wait goes on. answered is the question already answered. A server that
// stops answering for a while is reported as lost contact, never as the
// task failing.
func (s *server) follow(ctx context.Context, req *sdk.CallToolRequest, id string, wait time.Duration, answered string) (*sdk.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	p := progress{req: req}
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	var unreachable time.Time
	for {
		st, err := s.tasks.Status(ctx, id)
		switch {
		case ctx.Err() != nil && err != nil:
			return text(s.stillRunning(id, nil, wait)), nil
		case errors.Is(err, taskclient.ErrUnreachable):
			if unreachable.IsZero() {
				unreachable = time.Now()
			}
			if time.Since(unreachable) > lostContact {
				return nil, explain(err, id)
			}
		case err != nil:
			return nil, explain(err, id)
		default:
			unreachable = time.Time{}
			p.send(ctx, s.view.Progress(st), s.view.Place(st))
			if st.Phase.Done() {
				return text(s.describe(id, st)), nil
			}
			if q := st.Pending; q != nil {
				if questionKey(q) == answered {
					break // the user's answer is on its way to the task
				}
				if canAsk(req) {
					return askUser(id, q), nil
				}
				return text(s.describe(id, st)), nil
			}
		}
		select {
		case <-ctx.Done():
			if st, err := s.tasks.Status(context.WithoutCancel(ctx), id); err == nil {
				return text(s.stillRunning(id, &st, wait)), nil
			}
			return text(s.stillRunning(id, nil, wait)), nil
		case <-tick.C:
		}
	}
}

// lostContact is how long a wait keeps asking a server that does not
// answer.
const lostContact = time.Minute

// stillRunning is a wait's result when the task goes on past it.
func (s *server) stillRunning(id string, st *workflows.Status, wait time.Duration) string {
	out := fmt.Sprintf("task %s is still running after %s; follow it again with %s {\"id\": %q}", id, wait.Round(time.Second), toolWait, id)
	if st != nil {
		out += "\n\n" + s.describe(id, *st)
	}
	return out
}

// progress sends a wait's progress notifications: one per change of the
// task's place, its progress never going back (the protocol wants it to
// grow), out of 100.
type progress struct {
	req  *sdk.CallToolRequest
	last string
	sent float64
}

func (p *progress) send(ctx context.Context, frac float64, place string) {
	token := p.req.Params.GetProgressToken()
	if token == nil || place == p.last || p.req.Session == nil {
		return
	}
	p.last = place
	// A new attempt at a step starts lower than the last one got: the
	// notification still moves forward, by a hair.
	p.sent = min(max(frac*100, p.sent+0.01), 100)
	err := p.req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
		ProgressToken: token, Progress: p.sent, Total: 100, Message: termsafe.Line(place),
	})
	if err != nil {
		slog.Debug("send progress notification", "error", err)
	}
}

// answerTools name the tool that sends each answer a question accepts.
var answerTools = map[string]string{
	workflows.SignalApprove:  toolApprove,
	workflows.SignalReject:   toolReject,
	workflows.SignalFeedback: toolFeedback,
}

// gateText is a waiting question for a model to relay to its user: what
// is asked, the details, each answer it accepts and the tool that sends
// it, and when no answer counts as a rejection.
func gateText(id string, p *workflows.Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "WAITING FOR A PERSON: task %s asks (%s): %s\n", id, p.Kind, termsafe.Line(p.Question))
	if d := strings.TrimRight(p.Details, "\n"); d != "" {
		fmt.Fprintf(&b, "details:\n%s\n", termsafe.Text(detailsOf(d)))
	}
	b.WriteString("ask the user, then answer with one of:\n")
	for _, a := range p.Answers {
		tool := answerTools[a.Signal]
		switch {
		case a.Signal == "":
			fmt.Fprintf(&b, "  - %s: %s\n", strings.Join(a.Words, "/"), termsafe.Line(a.Means))
		case len(a.Words) > 0:
			fmt.Fprintf(&b, "  - %s {\"id\": %q, \"reply\": %q} (or %s): %s\n", toolAnswer, id, a.Words[0], tool, termsafe.Line(a.Means))
		default:
			fmt.Fprintf(&b, "  - %s {\"id\": %q, \"reply\": \"TEXT\"} (or %s with the text): %s\n", toolAnswer, id, tool, termsafe.Line(a.Means))
		}
	}
	if len(p.Answers) == 0 {
		fmt.Fprintf(&b, "  - %s, %s (with a reason) or %s (with guidance)\n", toolApprove, toolReject, toolFeedback)
	}
	if !p.Deadline.IsZero() {
		fmt.Fprintf(&b, "no answer by %s counts as a rejection", p.Deadline.UTC().Format(time.RFC3339))
	}
	return strings.TrimRight(b.String(), "\n")
}

// detailsOf is a question's details, cut to statusDetailsBytes.
func detailsOf(d string) string {
	if len(d) <= statusDetailsBytes {
		return d
	}
	return truncate.Head(d, statusDetailsBytes) + "\n… (cut)"
}

// answerInput names the elicitation whose answer a question's retry
// carries.
const answerInput = "answer"

// questionKey tells one question of a task from the next.
func questionKey(q *workflows.Approval) string {
	return q.Kind + "@" + q.Since.UTC().Format(time.RFC3339Nano)
}

// canAsk says whether the client can put a question to its user.
func canAsk(req *sdk.CallToolRequest) bool {
	if req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip != nil && ip.Capabilities != nil && ip.Capabilities.Elicitation != nil
}

// askUser is a result that asks the client's user the task's question; the
// client calls the tool again with the answer, and with the task and the
// question as its request state (resume reads them).
func askUser(id string, q *workflows.Approval) *sdk.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "autocoder task %s asks (%s): %s\n", id, q.Kind, termsafe.Line(q.Question))
	if d := strings.TrimRight(q.Details, "\n"); d != "" {
		b.WriteString(termsafe.Text(detailsOf(d)) + "\n")
	}
	var choices []string
	for _, a := range q.Answers {
		words := "other text"
		if len(a.Words) > 0 {
			words = strings.Join(a.Words, "/")
		}
		choices = append(choices, words+": "+termsafe.Line(a.Means))
	}
	fmt.Fprintf(&b, "answers: %s\n", strings.Join(choices, "; "))
	return &sdk.CallToolResult{
		InputRequests: sdk.InputRequestMap{answerInput: &sdk.ElicitParams{
			Message: strings.TrimRight(b.String(), "\n"),
			RequestedSchema: map[string]any{"type": "object", "required": []string{"reply"}, "properties": map[string]any{
				"reply": map[string]any{"type": "string", "title": "Your answer", "description": strings.Join(choices, "; ")},
			}},
		}},
		RequestState: id + "\n" + questionKey(q),
	}
}

// resume handles a tool's call again after askUser: it sends the answer
// the user gave to the question, if the task still asks it, and returns
// the task and the question answered, to wait on. A user who declined, or
// gave no answer the question accepts, ends the call with the question as
// its result (done).
func (s *server) resume(ctx context.Context, req *sdk.CallToolRequest) (id, answered string, done *sdk.CallToolResult, err error) {
	id, key, ok := strings.Cut(req.Params.RequestState, "\n")
	if !ok || checkID(id) != nil {
		return "", "", nil, fmt.Errorf("the request state %q is not one this server gave; call the tool again without it", req.Params.RequestState)
	}
	st, err := s.tasks.Status(ctx, id)
	if err != nil {
		return "", "", nil, explain(err, id)
	}
	q := st.Pending
	if q == nil || questionKey(q) != key {
		return id, "", nil, nil // answered meanwhile, elsewhere: wait on
	}
	res, _ := req.Params.InputResponses[answerInput].(*sdk.ElicitResult)
	reply := ""
	if res != nil && res.Action == "accept" {
		reply, _ = res.Content["reply"].(string)
	}
	a, ok := q.Match(reply)
	if !ok || a.Signal == "" {
		return id, "", text(s.describe(id, st)), nil
	}
	if err := s.tasks.Answer(ctx, id, a, strings.TrimSpace(reply)); err != nil {
		return "", "", nil, explain(err, id)
	}
	return id, key, nil, nil
}
