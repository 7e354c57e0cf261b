package starter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
)

// ListOptions are list's arguments.
type ListOptions struct {
	Status string
	Limit  int
	JSON   bool
}

func NewCmdList(f *Factory, runF func(*ListOptions) error) *cobra.Command {
	var o ListOptions
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tasks, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Limit < 1 {
				return usageError("--limit %d: want 1 or more", o.Limit)
			}
			if o.Status != "" && !slices.Contains(taskclient.ListStatuses, o.Status) {
				return usageError("--status %q: want one of %s", o.Status, listStatusNames())
			}
			if runF != nil {
				return runF(&o)
			}
			return listTasks(cmd.Context(), f, &o)
		},
	}
	cmd.Flags().StringVar(&o.Status, "status", "", "only tasks in this state: "+listStatusNames())
	cmd.Flags().IntVar(&o.Limit, "limit", 50, "at most this many tasks")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the list as JSON")
	return cmd
}

func listTasks(ctx context.Context, f *Factory, o *ListOptions) error {
	c, err := f.TaskClient(ctx)
	if err != nil {
		return err
	}
	tasks, err := c.List(ctx, taskclient.ListOptions{Status: o.Status, Limit: o.Limit})
	if err != nil {
		return err
	}
	if o.JSON {
		if tasks == nil {
			tasks = []taskclient.Task{} // [] rather than null
		}
		return writeJSON(f.IO.Out, tasks)
	}
	tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
	// Input tokens split as they are priced: fresh (those written to the
	// provider's cache included) and read from its cache.
	fmt.Fprintln(tw, "ID\tSTATUS\tPHASE\tLANG\tITER\tFRESH IN\tCACHED IN\tOUT\tCOST\tSTARTED\tTASK")
	for _, t := range tasks {
		in, cached, out := "-", "-", "-"
		if u := t.Usage; u != nil && u.Calls > 0 {
			in, cached, out = tokenCount(u.PromptTokens-u.CachedTokens), tokenCount(u.CachedTokens), tokenCount(u.CompletionTokens)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Status, orDefault(t.Phase, "-"), orDefault(t.Language, "-"),
			countOrDash(t.Iteration), in, cached, out, listCost(t), t.Started.Local().Format(time.DateTime), termsafe.Clip(t.Task, 60))
	}
	return tw.Flush()
}

func listStatusNames() string { return strings.Join(taskclient.ListStatuses, ", ") }

func countOrDash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// tokenCount is a count of tokens in a few characters: 950, 12.3k, 4.1M.
func tokenCount(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// listCost is a row's cost: its memo's (Usage) where the task keeps it
// there; else the list call has the total alone, so a task
// whose model has no known price, or runs on the worker's default model,
// which the list cannot see, costs what is unknown unless the total says
// otherwise.
func listCost(t taskclient.Task) string {
	if u := t.Usage; u != nil && u.Calls > 0 {
		return u.Cost()
	}
	if t.CostUSD > 0 {
		return fmt.Sprintf("$%.4f", t.CostUSD)
	}
	if spec, err := llm.ParseSpec(t.Model); t.Model != "" && err == nil {
		if _, ok := llm.PriceOf(spec.Model); ok {
			return "-"
		}
	}
	return "unknown"
}
