package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

func newStatusCmd(f *factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show where a task is: phase, plan step, iteration, last test result, tokens",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showStatus(cmd.Context(), f, args[0], asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func showStatus(ctx context.Context, f *factory, id string, asJSON bool) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	st, err := queryStatusPatiently(ctx, f, c, id)
	if errors.Is(err, errUnavailable) {
		return err
	}
	if err != nil {
		return fmt.Errorf("query task %s: %w", id, err)
	}
	var call *modelCall
	if !st.Phase.Done() {
		call = pendingModelCall(ctx, c, id)
	}
	if asJSON {
		return writeJSON(f.stdout, struct {
			workflows.Status
			ModelCall *modelCall `json:"modelCall,omitempty"`
		}{st, call})
	}
	printStatus(f.stdout, id, st)
	if call != nil {
		fmt.Fprintf(f.stdout, "model:     %s\n", call.describe(time.Now()))
	}
	return nil
}

// modelCall is a model call in flight, or failed and waiting for its
// retry, read from the task's pending activities: the activity's attempt
// and, from its heartbeat, since when it waits.
type modelCall struct {
	Activity    string    `json:"activity"`
	Attempt     int32     `json:"attempt"`
	MaxAttempts int32     `json:"maxAttempts,omitempty"` // 0: unlimited
	Since       time.Time `json:"since,omitzero"`        // the running attempt's call
	RetryAt     time.Time `json:"retryAt,omitzero"`      // the next attempt, after a failure
	LastFailure string    `json:"lastFailure,omitempty"`
}

// pendingModelCall finds the task's model call, if any; the status is
// shown without it when the server cannot say.
func pendingModelCall(ctx context.Context, c client.Client, id string) *modelCall {
	d, err := c.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil
	}
	for _, pa := range d.GetPendingActivities() {
		var hb activities.ModelCall
		if pa.GetHeartbeatDetails() == nil || converter.GetDefaultDataConverter().FromPayloads(pa.GetHeartbeatDetails(), &hb) != nil || hb.Since.IsZero() {
			continue // not an activity that calls the model
		}
		call := &modelCall{Activity: pa.GetActivityType().GetName(), Attempt: pa.GetAttempt(), MaxAttempts: pa.GetMaximumAttempts()}
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
			return nil
		}
		return call
	}
	return nil
}

func (m *modelCall) describe(now time.Time) string {
	attempt := fmt.Sprintf("attempt %d", m.Attempt)
	if m.MaxAttempts > 0 {
		attempt += fmt.Sprintf(" of %d", m.MaxAttempts)
	}
	if !m.Since.IsZero() {
		return fmt.Sprintf("waiting for the model for %s (%s)", max(now.Sub(m.Since), 0).Round(time.Second), attempt)
	}
	retry := fmt.Sprintf("retrying in %s (%s)", max(m.RetryAt.Sub(now), 0).Round(time.Second), attempt)
	if m.LastFailure == "" {
		return "the model call failed; " + retry
	}
	// The failure may quote the provider: clipLine makes it safe to print.
	return "the model call failed: " + clipLine(m.LastFailure, 200) + "; " + retry
}

func printStatus(w io.Writer, id string, st workflows.Status) {
	fmt.Fprintf(w, "task:      %s\n", id)
	fmt.Fprintf(w, "goal:      %s\n", clipLine(st.Task, 100))
	fmt.Fprintf(w, "language:  %s\n", st.Language)
	fmt.Fprintf(w, "phase:     %s\n", st.Phase)
	if len(st.Plan) > 0 {
		fmt.Fprintf(w, "step:      %d/%d\n", st.Step, len(st.Plan))
	}
	fmt.Fprintf(w, "iteration: %d/%d\n", st.Iteration, st.MaxIterations)
	printTestGuard(w, st)
	fmt.Fprintf(w, "tokens:    %d in, %d out (%d calls, $%.4f)\n", st.Usage.PromptTokens, st.Usage.CompletionTokens, st.Usage.Calls, st.Usage.CostUSD)
	if len(st.Plan) > 0 {
		fmt.Fprintln(w, "plan:")
		for i, s := range st.Plan {
			marker := " "
			switch {
			case i+1 < st.Step || (i+1 == st.Step && st.Phase == workflows.PhaseSucceeded):
				marker = "✓"
			case i+1 == st.Step:
				marker = "→"
			}
			fmt.Fprintf(w, "  %s %d. %s\n", marker, i+1, termsafe.Line(s))
		}
	}
	if len(st.Checkpoints) > 0 {
		fmt.Fprintln(w, "checkpoints:")
		for _, cp := range st.Checkpoints {
			fmt.Fprintf(w, "  #%d step %d iteration %d  %s  %s\n", cp.N, cp.Step, cp.Iteration, cp.Time.Format("15:04:05"), termsafe.Line(cp.Summary))
			printFindings(w, "      ", cp.Findings)
		}
	}
	if lt := st.LastTest; lt != nil && !lt.Passed && lt.Output != "" {
		fmt.Fprintf(w, "last output (%s):\n%s\n", termsafe.Line(lt.Headline()), indent(termsafe.Text(tailLines(lt.Output, 15))))
	}
	if st.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", termsafe.Text(st.Error))
	}
}
