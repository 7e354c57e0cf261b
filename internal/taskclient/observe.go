package taskclient

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/workflows"
)

// ModelCall is a model call in flight, or failed and waiting for its
// retry, read from the task's pending activities: the activity's attempt
// and, from its heartbeat, since when it waits.
type ModelCall struct {
	Activity    string    `json:"activity"`
	Attempt     int32     `json:"attempt"`
	MaxAttempts int32     `json:"maxAttempts,omitempty"` // 0: unlimited
	Since       time.Time `json:"since,omitzero"`        // the running attempt's call
	RetryAt     time.Time `json:"retryAt,omitzero"`      // the next attempt, after a failure
	LastFailure string    `json:"lastFailure,omitempty"`
}

// ModelCall finds the task's model call; nil when there is none.
func (c *Client) ModelCall(ctx context.Context, id string) (*ModelCall, error) {
	d, err := c.Describe(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, pa := range d.GetPendingActivities() {
		var hb activities.ModelCall
		if pa.GetHeartbeatDetails() == nil || converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &hb) != nil || hb.Since.IsZero() {
			continue // not an activity that calls the model
		}
		call := &ModelCall{Activity: pa.GetActivityType().GetName(), Attempt: pa.GetAttempt(), MaxAttempts: pa.GetMaximumAttempts()}
		switch {
		case pa.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED:
			call.Since = hb.Since
			// Details from an earlier attempt: this one has only just
			// started, and heartbeats within a second of its call.
			if started := pa.GetLastStartedTime().AsTime(); pa.GetLastHeartbeatTime().AsTime().Before(started) {
				call.Since = started
			}
		case pa.GetNextAttemptScheduleTime() != nil:
			call.RetryAt = pa.GetNextAttemptScheduleTime().AsTime()
			call.LastFailure = pa.GetLastFailure().GetMessage()
		default:
			return nil, nil
		}
		return call, nil
	}
	return nil, nil
}

// Retry is an activity of the task that failed and is retried: waiting
// for its next attempt (RetryAt set) or running it.
type Retry struct {
	ActivityID  string    `json:"activityId"`
	Activity    string    `json:"activity"`
	Attempt     int32     `json:"attempt"`               // the next attempt, or the one running
	MaxAttempts int32     `json:"maxAttempts,omitempty"` // 0: unlimited
	RetryAt     time.Time `json:"retryAt,omitzero"`
	LastFailure string    `json:"lastFailure,omitempty"`
}

// Retries lists the task's activities past their first attempt, from its
// pending activities, in the server's order.
func (c *Client) Retries(ctx context.Context, id string) ([]Retry, error) {
	d, err := c.Describe(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []Retry
	for _, pa := range d.GetPendingActivities() {
		if pa.GetAttempt() < 2 {
			continue
		}
		r := Retry{ActivityID: pa.GetActivityId(), Activity: pa.GetActivityType().GetName(), Attempt: pa.GetAttempt(),
			MaxAttempts: pa.GetMaximumAttempts(), LastFailure: pa.GetLastFailure().GetMessage()}
		if pa.GetState() != enumspb.PENDING_ACTIVITY_STATE_STARTED && pa.GetNextAttemptScheduleTime() != nil {
			r.RetryAt = pa.GetNextAttemptScheduleTime().AsTime()
		}
		out = append(out, r)
	}
	return out, nil
}

// History returns the events of the task's current run, for tests and
// benchmarks that read what happened when.
func (c *Client) History(ctx context.Context, id string) ([]*historypb.HistoryEvent, error) {
	return c.runHistory(ctx, id, "")
}

// RunHistories returns the events of each of the task's runs, first to
// last, following its continue-as-new chain: what a replay test records,
// and where signals that reached a run as it continued show.
func (c *Client) RunHistories(ctx context.Context, id string) ([][]*historypb.HistoryEvent, error) {
	d, err := c.Describe(ctx, id)
	if err != nil {
		return nil, err
	}
	var runs [][]*historypb.HistoryEvent
	for runID := d.GetWorkflowExecutionInfo().GetFirstRunId(); runID != ""; {
		events, err := c.runHistory(ctx, id, runID)
		if err != nil {
			return runs, err
		}
		runs = append(runs, events)
		runID = ""
		if n := len(events); n > 0 { // a run that continued as new ends so
			runID = events[n-1].GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
	}
	return runs, nil
}

// runHistory reads the events of one run; an empty runID is the current.
func (c *Client) runHistory(ctx context.Context, id, runID string) ([]*historypb.HistoryEvent, error) {
	var events []*historypb.HistoryEvent
	it := c.sdk.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return events, fmt.Errorf("history of %s: %w", id, classify(err))
		}
		events = append(events, ev)
	}
	return events, nil
}

// TranscriptReader is the part of the store that holds conversations.
type TranscriptReader interface {
	Transcript(ctx context.Context, id string) ([]store.TranscriptEntry, error)
}

// Conversation is one of a task's conversations: a plan step's, in order.
type Conversation struct {
	workflows.TranscriptRef
	Messages []llm.Message `json:"messages"`
}

// Transcript reads the task's conversations, named by its status, from
// the store; a task without any has none.
func (c *Client) Transcript(ctx context.Context, id string, entries TranscriptReader) ([]Conversation, error) {
	st, err := c.Status(ctx, id)
	if err != nil {
		return nil, err
	}
	return ReadConversations(ctx, st.Transcripts, entries)
}

// ReadConversations reads the conversations refs name from the store.
func ReadConversations(ctx context.Context, refs []workflows.TranscriptRef, entries TranscriptReader) ([]Conversation, error) {
	convs := make([]Conversation, 0, len(refs))
	for _, ref := range refs {
		es, err := entries.Transcript(ctx, ref.ID)
		if err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", ref.ID, err)
		}
		conv := Conversation{TranscriptRef: ref, Messages: make([]llm.Message, len(es))}
		for i, e := range es {
			if err := json.Unmarshal(e.Data, &conv.Messages[i]); err != nil {
				return nil, fmt.Errorf("transcript %s entry %d: %w", ref.ID, i, err)
			}
		}
		convs = append(convs, conv)
	}
	return convs, nil
}
