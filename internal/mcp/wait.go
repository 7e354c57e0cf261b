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
// (when the client asked for them with a progress token). A server that
// stops answering for a while is reported as lost contact, never as the
// task failing.
func (s *server) follow(ctx context.Context, req *sdk.CallToolRequest, id string, wait time.Duration) (string, error) {
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
			return s.stillRunning(id, nil, wait), nil
		case errors.Is(err, taskclient.ErrUnreachable):
			if unreachable.IsZero() {
				unreachable = time.Now()
			}
			if time.Since(unreachable) > lostContact {
				return "", explain(err, id)
			}
		case err != nil:
			return "", explain(err, id)
		default:
			unreachable = time.Time{}
			p.send(ctx, s.view.Progress(st), s.view.Place(st))
			if st.Phase.Done() || st.Pending != nil {
				return s.describe(id, st), nil
			}
		}
		select {
		case <-ctx.Done():
			if st, err := s.tasks.Status(context.WithoutCancel(ctx), id); err == nil {
				return s.stillRunning(id, &st, wait), nil
			}
			return s.stillRunning(id, nil, wait), nil
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
