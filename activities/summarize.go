package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/truncate"
)

// opening counts a conversation's opening messages, the system prompt and
// the first user message (see OpenStep): every request sends them, so no
// summary covers them.
const opening = 2

// Bounds of a summary's request and of the summary itself.
const (
	summaryResultBytes  = 1 << 10   // of one tool output quoted
	summaryMessageBytes = 4 << 10   // of one message's text or a call's arguments
	summaryInputBytes   = 160 << 10 // of the conversation quoted, head and tail kept
	summaryTextBytes    = 8 << 10   // of the summary
)

const summarizeSystem = `You summarize the earlier part of a software engineer's working session with tools, so the work can go on without it.
Be faithful: report only what the conversation shows, and keep exact paths, names, line numbers, commands and error messages.`

const summarizeAsk = `Summarize the conversation below for the engineer who continues it. Say:
- the tool calls made and what they found (files, functions, line numbers);
- the files changed and how;
- the commands and tests run, and their outcomes;
- what failed and why, and what was left to do.
At most 400 words; no preamble.`

// Summarize asks the model for a summary of the transcript's messages
// from the end of its opening (or of the Previous summary, which the new
// one takes in) to Position, and stores its text in a memo that
// ModelTurn's Summary names. The call is memoized by transcript, position
// and previous summary before its answer is used, so a retry never pays
// for it twice.
func (a *Activities) Summarize(ctx context.Context, in SummarizeInput) (SummarizeOutput, error) {
	msgs, err := a.conversationTo(ctx, in.Transcript, in.Position)
	if err != nil {
		return SummarizeOutput{}, err
	}
	from, previous, prevKey := opening, "", ""
	if in.Previous != nil {
		if previous, err = a.summaryText(ctx, *in.Previous); err != nil {
			return SummarizeOutput{}, err
		}
		from, prevKey = in.Previous.Covers, in.Previous.Key
	}
	if err := checkCut(in.Transcript, msgs, in.Position); err != nil {
		return SummarizeOutput{}, err
	}
	if in.Position <= from {
		return SummarizeOutput{}, badInput("transcript %s: nothing to summarize before %d, past %d", in.Transcript, in.Position, from)
	}
	model, spec, err := a.model(in.Model)
	if err != nil {
		return SummarizeOutput{}, err
	}
	pos := strconv.Itoa(in.Position)
	resp, usage, err := a.completeOnce(ctx, memoKey("summarize", in.Transcript, pos, prevKey), model, spec,
		llm.Request{System: summarizeSystem, Prompt: summarizePrompt(previous, msgs[from:in.Position]), Stream: true})
	if err != nil {
		return SummarizeOutput{}, err
	}
	text := strings.TrimSpace(clip(resp.Text, summaryTextBytes))
	if text == "" {
		return SummarizeOutput{}, errors.New("summarize: the model's answer is empty") // retried
	}
	key := memoKey("summary", in.Transcript, pos, prevKey)
	// Unlike a call's memo this one must be kept: turns read the summary
	// from it. A retry finds the call's memo and does not pay again.
	if err := a.putMemo(ctx, key, []byte(text)); err != nil {
		return SummarizeOutput{}, fmt.Errorf("store summary: %w", err)
	}
	activity.GetLogger(ctx).Info("older turns summarized", "transcript", in.Transcript, "from", from, "to", in.Position, "bytes", len(text))
	return SummarizeOutput{Summary: TurnSummary{Key: key, Covers: in.Position}, Usage: usage}, nil
}

// checkCut refuses a cut between a model's calls and their results: the
// messages after it would answer calls the model no longer sees.
func checkCut(id string, msgs []llm.Message, pos int) error {
	if pos < opening {
		return badInput("transcript %s: position %d is inside its opening messages", id, pos)
	}
	if pos < len(msgs) && msgs[pos].Role == llm.RoleTool {
		return badInput("transcript %s: position %d holds a tool result; cut before the model's turn", id, pos)
	}
	return nil
}

// summaryText reads a summary's text.
func (a *Activities) summaryText(ctx context.Context, s TurnSummary) (string, error) {
	raw, err := a.Store.GetMemo(ctx, s.Key)
	if errors.Is(err, store.ErrNotFound) {
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("summary %.12s not found", s.Key), ErrTypeBadInput, err)
	}
	if err != nil {
		return "", fmt.Errorf("read summary: %w", err)
	}
	return string(raw), nil
}

// summarized returns the messages a turn sends: with a summary, the
// opening messages, the summary in place of the turns it covers, and the
// turns after them. It also returns where the messages sent whole begin
// past the opening.
func (a *Activities) summarized(ctx context.Context, id string, msgs []llm.Message, s *TurnSummary) ([]llm.Message, int, error) {
	if s == nil {
		return msgs, opening, nil
	}
	if s.Covers > len(msgs) {
		return nil, 0, badInput("transcript %s: the summary covers %d messages, past position %d", id, s.Covers, len(msgs))
	}
	if err := checkCut(id, msgs, s.Covers); err != nil {
		return nil, 0, err
	}
	text, err := a.summaryText(ctx, *s)
	if err != nil {
		return nil, 0, err
	}
	out := append(msgs[:opening:opening], llm.Message{Role: llm.RoleUser, Text: fmt.Sprintf(
		"Summary of earlier turns (%d messages elided; their tool outputs are gone, so call a tool again if you need one):\n%s",
		s.Covers-opening, text)})
	return append(out, msgs[s.Covers:]...), s.Covers, nil
}

// summarizeTo returns how far a summary should reach for a request over
// its budget, when one can still help: to the start of the latest turn,
// whose results the model is about to read, or when a summary already
// reaches that far, to the end. Zero means everything is summarized.
func summarizeTo(msgs []llm.Message, covers int) int {
	for i := len(msgs) - 1; i > covers; i-- {
		if msgs[i].Role == llm.RoleAssistant {
			return i
		}
	}
	if len(msgs) > covers {
		return len(msgs)
	}
	return 0
}

// summarizePrompt quotes the previous summary and the messages to fold
// into the new one, each bounded.
func summarizePrompt(previous string, msgs []llm.Message) string {
	var conv strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case llm.RoleTool:
			r := m.Result
			status := "ok"
			if r.IsError {
				status = "error"
			}
			fmt.Fprintf(&conv, "[result of %s %s, %s, %d bytes]\n%s\n\n", r.Name, r.CallID, status, len(r.Content), clip(r.Content, summaryResultBytes))
		default:
			if m.Text != "" {
				fmt.Fprintf(&conv, "[%s]\n%s\n\n", m.Role, clip(m.Text, summaryMessageBytes))
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&conv, "[call %s %s] %s\n", c.Name, c.ID, clip(c.Arguments, summaryMessageBytes))
			}
		}
	}
	text := conv.String()
	if len(text) > summaryInputBytes {
		half := summaryInputBytes / 2
		text = truncate.Head(text, half) + fmt.Sprintf("\n[… %d bytes of the conversation left out …]\n", len(text)-2*half) + truncate.Tail(text, half)
	}
	var b strings.Builder
	b.WriteString(summarizeAsk + "\n\n")
	if previous != "" {
		fmt.Fprintf(&b, "Summary of the turns before these:\n%s\n\n", previous)
	}
	b.WriteString("Conversation:\n" + text)
	return b.String()
}
