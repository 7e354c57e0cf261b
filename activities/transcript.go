package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/store"
)

// ErrTypeTranscriptConflict is an append the transcript refuses: the
// workflow's position is stale, or a different entry holds it. Retrying
// the same append cannot help.
const ErrTypeTranscriptConflict = "TranscriptConflict"

// AppendMessagesInput adds messages a person or the workflow writes (the
// first prompt, a failure to fix) to a conversation.
type AppendMessagesInput struct {
	Transcript string        `json:"transcript"`
	Position   int           `json:"position"` // the transcript's length before the append
	Messages   []llm.Message `json:"messages"`
}

// AppendMessages appends messages at Position and returns the new length.
// A retry appends nothing twice.
func (a *Activities) AppendMessages(ctx context.Context, in AppendMessagesInput) (int, error) {
	if err := a.appendMessages(ctx, in.Transcript, in.Position, in.Messages...); err != nil {
		return 0, err
	}
	return in.Position + len(in.Messages), nil
}

// conversation reads a transcript's messages in order.
func (a *Activities) conversation(ctx context.Context, id string) ([]llm.Message, error) {
	if id == "" {
		return nil, badInput("no transcript id")
	}
	entries, err := a.Store.Transcript(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load transcript: %w", err)
	}
	msgs := make([]llm.Message, len(entries))
	for i, e := range entries {
		if err := json.Unmarshal(e.Data, &msgs[i]); err != nil {
			return nil, temporal.NewNonRetryableApplicationError(
				fmt.Sprintf("transcript %s entry %d (%.12s) is not a message: %v", id, i, e.Hash, err), ErrTypeBadInput, err)
		}
	}
	return msgs, nil
}

// appendMessages stores msgs at pos, pos+1, … of the transcript.
func (a *Activities) appendMessages(ctx context.Context, id string, pos int, msgs ...llm.Message) error {
	entries := make([][]byte, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode message: %w", err)
		}
		entries[i] = b
	}
	if _, err := a.Store.AppendEntries(ctx, id, pos, entries); err != nil {
		if errors.Is(err, store.ErrTranscriptConflict) {
			return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTranscriptConflict, err)
		}
		return fmt.Errorf("append to transcript: %w", err)
	}
	return nil
}

// conversationTo reads a transcript that must hold at least pos messages:
// the position a turn or a tool call's results go to.
func (a *Activities) conversationTo(ctx context.Context, id string, pos int) ([]llm.Message, error) {
	msgs, err := a.conversation(ctx, id)
	if err != nil {
		return nil, err
	}
	if pos < 0 || len(msgs) < pos {
		return nil, badInput("transcript %s has %d messages; position %d is past its end", id, len(msgs), pos)
	}
	return msgs, nil
}
