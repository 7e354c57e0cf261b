package starter

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/workflows"
)

// listStatuses maps --status values to Temporal execution statuses.
var listStatuses = map[string]string{
	"running":    "Running",
	"completed":  "Completed",
	"failed":     "Failed",
	"cancelled":  "Canceled",
	"terminated": "Terminated",
	"timed-out":  "TimedOut",
}

type listedTask struct {
	ID      string    `json:"id"`
	Status  string    `json:"status"`
	Phase   string    `json:"phase,omitempty"`
	Started time.Time `json:"started"`
	Task    string    `json:"task"`
}

func newListCmd(f *factory) *cobra.Command {
	var status string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List tasks, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 1 {
				return usageError("--limit %d: want 1 or more", limit)
			}
			query := fmt.Sprintf("WorkflowType = '%s'", workflows.WorkflowName)
			if status != "" {
				s, ok := listStatuses[status]
				if !ok {
					return usageError("--status %q: want one of running, completed, failed, cancelled, terminated, timed-out", status)
				}
				query += fmt.Sprintf(" AND ExecutionStatus = '%s'", s)
			}
			tasks, err := listTasks(cmd.Context(), f, query, limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(f.stdout, tasks)
			}
			tw := tabwriter.NewWriter(f.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tPHASE\tSTARTED\tTASK")
			for _, t := range tasks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.Status, orDefault(t.Phase, "-"), t.Started.Local().Format(time.DateTime), clipLine(t.Task, 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&status, "status", "", "only tasks in this state: running, completed, failed, cancelled, terminated, timed-out")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many tasks")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func listTasks(ctx context.Context, f *factory, query string, limit int) ([]listedTask, error) {
	c, err := f.Client(ctx)
	if err != nil {
		return nil, err
	}
	var tasks []listedTask
	var token []byte
	for len(tasks) < limit {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: f.cfg.Namespace, Query: query, PageSize: int32(min(limit, 100)), NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			if len(tasks) == limit {
				break
			}
			tasks = append(tasks, listedTask{
				ID:      e.GetExecution().GetWorkflowId(),
				Status:  strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
				Phase:   decodeString(e.GetSearchAttributes().GetIndexedFields()[workflows.SearchAttrPhase]),
				Started: e.GetStartTime().AsTime(),
				Task:    taskSummary(ctx, c, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()),
			})
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return tasks, nil
}

// taskSummary reads the static summary (the task text); listings do not
// carry it.
func taskSummary(ctx context.Context, c client.Client, id, runID string) string {
	d, err := c.DescribeWorkflowExecution(ctx, id, runID)
	if err != nil {
		return ""
	}
	return decodeString(d.GetExecutionConfig().GetUserMetadata().GetSummary())
}

func decodeString(p *commonpb.Payload) string {
	if p == nil {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		return ""
	}
	return s
}
