package starter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

// StatusOptions are status's arguments.
type StatusOptions struct {
	ID   string
	JSON bool
}

func NewCmdStatus(f *Factory, runF func(*StatusOptions) error) *cobra.Command {
	var o StatusOptions
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show where a task is: phase, plan step, iteration, turn and tool call, last test result, tokens",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(&o)
			}
			return showStatus(cmd.Context(), f, o.ID, o.JSON)
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the status as JSON")
	return cmd
}

func showStatus(ctx context.Context, f *Factory, id string, asJSON bool) error {
	c, err := f.TaskClient(ctx)
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
		// The status is shown without the call when the server cannot say.
		call, _ = c.ModelCall(ctx, id)
	}
	if asJSON {
		return writeJSON(f.IO.Out, struct {
			workflows.Status
			ModelCall *modelCall `json:"modelCall,omitempty"`
		}{st, call})
	}
	printStatus(f.IO.Out, id, st)
	if call != nil {
		fmt.Fprintf(f.IO.Out, "model:     %s\n", describeCall(call, time.Now()))
	}
	if note := f.settingslessNote(id); note != "" && !st.Phase.Done() {
		fmt.Fprintf(f.IO.Out, "note:      %s\n", note)
	}
	return nil
}

// modelCall is the task's model call in flight or waiting for its retry.
type modelCall = taskclient.ModelCall

func describeCall(m *modelCall, now time.Time) string {
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
	// The failure may quote the provider: Clip makes it safe to print.
	return "the model call failed: " + termsafe.Clip(m.LastFailure, 200) + "; " + retry
}

func printStatus(w io.Writer, id string, st workflows.Status) {
	fmt.Fprintf(w, "task:      %s\n", id)
	fmt.Fprintf(w, "goal:      %s\n", termsafe.Clip(st.Task, 100))
	fmt.Fprintf(w, "language:  %s\n", st.Language)
	fmt.Fprintf(w, "phase:     %s\n", st.Phase)
	if su := st.Setup; su != nil {
		fmt.Fprintf(w, "setup:     %s (%s)\n", termsafe.Line(su.Note), termsafe.Clip(su.Command, 80))
	}
	if len(st.Plan) > 0 {
		fmt.Fprintf(w, "step:      %d/%d\n", st.Step, len(st.Plan))
	}
	fmt.Fprintf(w, "iteration: %d/%d\n", st.Iteration, st.MaxIterations)
	if turn := turnLine(st); turn != "" {
		fmt.Fprintf(w, "now:       %s\n", turn)
	}
	if len(st.Instructions) > 0 {
		fmt.Fprintf(w, "instructions read: %s\n", termsafe.Line(strings.Join(st.Instructions, ", ")))
	}
	printTestGuard(w, st)
	if m := modelLine(st); m != "" {
		fmt.Fprintf(w, "model:     %s\n", m)
	}
	fmt.Fprintf(w, "tokens:    %s\n", usageText(st.Usage))
	printModelUsage(w, "  ", st.Usage)
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
			printWarnings(w, "      ", cp.Warnings)
		}
	}
	if lt := st.LastTest; lt != nil && lt.Deps != "" {
		fmt.Fprintf(w, "deps:      %s\n", termsafe.Line(lt.Deps))
	}
	if lt := st.LastTest; lt != nil && !lt.Passed && lt.Output != "" {
		fmt.Fprintf(w, "last output (%s):\n%s\n", termsafe.Line(lt.Headline()), indent(termsafe.Text(tailLines(lt.Output, 15))))
	}
	if st.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", termsafe.Text(st.Error))
	}
}

// turnLine names the model turn of the running attempt and what it does,
// e.g. "turn 4: read app/models.py"; empty when no turn runs.
func turnLine(st workflows.Status) string {
	if st.Turn == 0 || st.Phase.Done() {
		return ""
	}
	if st.Doing == "" {
		return fmt.Sprintf("turn %d", st.Turn)
	}
	return fmt.Sprintf("turn %d: %s", st.Turn, termsafe.Clip(st.Doing, 100))
}
