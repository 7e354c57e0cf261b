package taskclient

import (
	"context"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/workflows"
)

// ListStatuses are the states List filters by.
var ListStatuses = []string{"running", "completed", "failed", "cancelled", "terminated", "timed-out"}

// executionStatus maps ListStatuses to Temporal's names.
var executionStatus = map[string]string{
	"running":    "Running",
	"completed":  "Completed",
	"failed":     "Failed",
	"cancelled":  "Canceled",
	"terminated": "Terminated",
	"timed-out":  "TimedOut",
}

// ListOptions choose the tasks List returns.
type ListOptions struct {
	Status string // one of ListStatuses; "" for all
	Limit  int
}

// Task is one row of a listing, read from the list call alone: the search
// attributes the task keeps current (when the namespace has them) and the
// memo Start set. A task started without them shows what there is.
type Task struct {
	ID        string  `json:"id"`
	Status    string  `json:"status"`
	Phase     string  `json:"phase,omitempty"`
	Language  string  `json:"language,omitempty"`
	Iteration int     `json:"iteration,omitempty"`
	CostUSD   float64 `json:"costUsd,omitempty"`
	// Usage is the task's tokens and cost as its memo has them; nil for
	// a task that keeps none there (started before it did).
	Usage   *activities.Usage `json:"usage,omitempty"`
	Model   string            `json:"model,omitempty"`
	Started time.Time         `json:"started"`
	Closed  time.Time         `json:"closed,omitzero"`
	Task    string            `json:"task"`
}

// List returns tasks, newest first.
func (c *Client) List(ctx context.Context, o ListOptions) ([]Task, error) {
	query := fmt.Sprintf("WorkflowType = '%s'", workflows.WorkflowName)
	if o.Status != "" {
		s, ok := executionStatus[o.Status]
		if !ok {
			return nil, fmt.Errorf("list tasks: unknown status %q", o.Status)
		}
		query += fmt.Sprintf(" AND ExecutionStatus = '%s'", s)
	}
	var tasks []Task
	var token []byte
	for len(tasks) < o.Limit {
		resp, err := c.sdk.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: c.namespace, Query: query, PageSize: int32(min(o.Limit, 100)), NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list tasks: %w", classify(err))
		}
		for _, e := range resp.GetExecutions() {
			if len(tasks) == o.Limit {
				break
			}
			attrs := e.GetSearchAttributes().GetIndexedFields()
			memo := e.GetMemo().GetFields()
			t := Task{
				ID:        e.GetExecution().GetWorkflowId(),
				Status:    strings.ToLower(strings.TrimPrefix(e.GetStatus().String(), "WORKFLOW_EXECUTION_STATUS_")),
				Phase:     decode[string](attrs[workflows.SearchAttrPhase]),
				Language:  decode[string](attrs[workflows.SearchAttrLanguage]),
				Iteration: int(decode[int64](attrs[workflows.SearchAttrIteration])),
				CostUSD:   decode[float64](attrs[workflows.SearchAttrCostUSD]),
				Model:     decode[string](memo[memoModel]),
				Started:   e.GetStartTime().AsTime(),
				Task:      decode[string](memo[memoTask]),
			}
			if t.Language == "" {
				t.Language = decode[string](memo[memoLanguage])
			}
			if p := memo[workflows.MemoUsage]; p != nil {
				u := decode[activities.Usage](p)
				t.Usage = &u
			}
			if e.GetCloseTime() != nil {
				t.Closed = e.GetCloseTime().AsTime()
			}
			tasks = append(tasks, t)
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			break
		}
	}
	return tasks, nil
}

// decode reads a payload as T; a missing or different one is T's zero.
func decode[T any](p *commonpb.Payload) T {
	var v T
	if p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, &v)
	}
	return v
}

// OpenTasks counts the namespace's tasks that have not ended, including
// those waiting for a person: whether a local server is busy.
func (c *Client) OpenTasks(ctx context.Context) (int64, error) {
	resp, err := c.sdk.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: c.namespace,
		Query:     "ExecutionStatus = 'Running'",
	})
	if err != nil {
		return 0, fmt.Errorf("count open tasks: %w", classify(err))
	}
	return resp.GetCount(), nil
}
