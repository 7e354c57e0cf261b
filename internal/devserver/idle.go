package devserver

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/api/workflowservice/v1"
)

// openWorkflows counts the namespace's workflows that are still running,
// including those waiting for a person.
type openWorkflows interface {
	CountWorkflow(ctx context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
}

// WaitIdle returns once, for a whole idle period, the namespace had no
// open workflow and no client attached to the data dir (see Touch); or
// ctx's error when ctx ends first. It returns the last client attach it
// saw, for Busy. A failed count counts as busy: a server that cannot tell
// must not stop under a task.
func WaitIdle(ctx context.Context, svc openWorkflows, namespace, dataDir string, idle time.Duration) (seen time.Time, err error) {
	every := min(max(idle/4, 100*time.Millisecond), 10*time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	busy := time.Now()
	for {
		select {
		case <-ctx.Done():
			return seen, ctx.Err()
		case <-tick.C:
		}
		if open, err := countOpen(ctx, svc, namespace); err != nil || open > 0 {
			busy = time.Now()
		}
		if seen = lastAttach(dataDir); seen.After(busy) {
			busy = seen
		}
		if time.Since(busy) >= idle {
			return seen, nil
		}
	}
}

// Busy reports whether the namespace has an open workflow, or a client
// attached since WaitIdle saw seen. A server that found itself idle checks
// it again after it stopped publishing its address (under the start lock),
// so that a client that attached in between is not left without a server:
// clients touch before they read the address file. Any change of the
// attach time counts, however long ago WaitIdle looked.
func Busy(ctx context.Context, svc openWorkflows, namespace, dataDir string, seen time.Time) bool {
	open, err := countOpen(ctx, svc, namespace)
	return err != nil || open > 0 || !lastAttach(dataDir).Equal(seen)
}

func countOpen(ctx context.Context, svc openWorkflows, namespace string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	resp, err := svc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: namespace,
		Query:     "ExecutionStatus = 'Running'",
	})
	if err != nil {
		return 0, fmt.Errorf("count open workflows: %w", err)
	}
	return resp.GetCount(), nil
}
