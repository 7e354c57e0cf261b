package starter

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

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
	if asJSON {
		return writeJSON(f.stdout, st)
	}
	printStatus(f.stdout, id, st)
	return nil
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
		}
	}
	if lt := st.LastTest; lt != nil && !lt.Passed && lt.Output != "" {
		fmt.Fprintf(w, "last output (%s):\n%s\n", termsafe.Line(lt.Headline()), indent(termsafe.Text(tailLines(lt.Output, 15))))
	}
	if st.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", termsafe.Text(st.Error))
	}
}
