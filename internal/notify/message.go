package notify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/truncate"
)

// Message is what the workflow says about a task; the body of each format
// is made from it. Task, Details and Result hold people's and the model's
// text, which every format escapes.
type Message struct {
	TaskID string `json:"taskId"`
	Event  Event  `json:"event"`
	Task   string `json:"task"`
	// A gate's question: its kind (plan, policy, command, budget, stuck,
	// integrity), the question, what it is about and the answers it takes.
	Gate     string   `json:"gate,omitempty"`
	Question string   `json:"question,omitempty"`
	Details  string   `json:"details,omitempty"`
	Answers  []Answer `json:"answers,omitempty"`
	// Result is how the task ended: a summary, or why it failed.
	Result string `json:"result,omitempty"`
}

// Answer is one reply a gate takes: its typed words (none: any other
// text), the signal it sends (approve, reject or feedback; none: it
// decides nothing) and what it does.
type Answer struct {
	Words  []string `json:"words,omitempty"`
	Signal string   `json:"signal,omitempty"`
	Means  string   `json:"means"`
}

// Bounds on quoted text, in bytes: a message is read on a phone, and
// Discord takes 2000 characters at most.
const (
	maxTask    = 200
	maxDetails = 700
)

// Title is the message's first line.
func (m Message) Title() string {
	switch m.Event {
	case EventGate:
		return fmt.Sprintf("autocoder: task %s waits for you (%s)", m.TaskID, m.Gate)
	case EventSucceeded:
		return fmt.Sprintf("autocoder: task %s succeeded", m.TaskID)
	case EventCancelled:
		return fmt.Sprintf("autocoder: task %s was cancelled", m.TaskID)
	}
	return fmt.Sprintf("autocoder: task %s failed", m.TaskID)
}

// quotedTask, quotedDetails and quotedResult are the people's and the
// model's text, cut to their bounds.
func (m Message) quotedTask() string    { return truncate.Quote(m.Task, maxTask) }
func (m Message) quotedDetails() string { return truncate.Quote(m.Details, maxDetails) }
func (m Message) quotedResult() string  { return truncate.Quote(m.Result, maxDetails) }

// answerCommand is the command that sends an answer's signal.
func answerCommand(id, signal string) string {
	switch signal {
	case "approve":
		return "autocoder approve " + id
	case "reject":
		return "autocoder reject " + id + " --reason TEXT"
	case "feedback":
		return "autocoder feedback " + id + " TEXT"
	}
	return ""
}

// Commands are the commands a person runs next: those that answer a gate,
// or those that show or fetch the result.
func (m Message) Commands() []string {
	id := m.TaskID
	if m.Event != EventGate {
		if m.Event == EventSucceeded {
			return []string{"autocoder export " + id + " DIR", "autocoder status " + id}
		}
		return []string{"autocoder status " + id, "autocoder transcript " + id}
	}
	var cmds []string
	for _, a := range m.Answers {
		if c := answerCommand(id, a.Signal); c != "" && !slices.Contains(cmds, c) {
			cmds = append(cmds, c)
		}
	}
	return append(cmds, "autocoder watch "+id)
}

// answerLines lists the replies a gate takes, one a line: "y, yes: approve".
func (m Message) answerLines() []string {
	var lines []string
	for _, a := range m.Answers {
		words := strings.Join(a.Words, ", ")
		if words == "" {
			words = "other text"
		}
		lines = append(lines, words+": "+a.Means)
	}
	return lines
}
