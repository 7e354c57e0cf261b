package devserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// TestSetupNamespace prepares a second namespace of a running server the
// way a cluster's setup job does: created once with its retention and
// usable search attributes, unchanged on a second run, a conflicting
// attribute type and a retention the server refuses reported at once.
func TestSetupNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{DataDir: t.TempDir(), UIPort: NoUI, Logger: testLogger()})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	const ns = "team"
	attrs := map[string]enums.IndexedValueType{
		"TeamPhase": enums.INDEXED_VALUE_TYPE_KEYWORD,
		"TeamCost":  enums.INDEXED_VALUE_TYPE_DOUBLE,
	}
	o := NamespaceOptions{HostPort: srv.FrontendAddress(), Namespace: ns, Retention: 48 * time.Hour, SearchAttributes: attrs, Logger: testLogger()}

	created, err := SetupNamespace(ctx, o)
	if err != nil || !created {
		t.Fatalf("first setup: created %v, %v; want created", created, err)
	}
	c := dial(t, srv)
	d, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if err != nil {
		t.Fatalf("describe %s: %v", ns, err)
	}
	if got := d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != o.Retention {
		t.Errorf("retention %s, want %s", got, o.Retention)
	}
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	for name, typ := range attrs {
		if got := list.GetCustomAttributes()[name]; got != typ {
			t.Errorf("search attribute %s is %v, want %v", name, got, typ)
		}
	}
	// Usable as soon as setup returns: a query naming them is accepted.
	if _, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
		Namespace: ns, Query: `TeamPhase = "plan" AND TeamCost > 1`,
	}); err != nil {
		t.Errorf("query on the new attributes: %v", err)
	}

	again := o
	again.Retention = 72 * time.Hour
	if created, err := SetupNamespace(ctx, again); err != nil || created {
		t.Fatalf("second setup: created %v, %v; want an unchanged namespace", created, err)
	}
	d, err = c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != o.Retention {
		t.Errorf("a second setup changed the retention to %s", got)
	}

	conflicting := o
	conflicting.SearchAttributes = map[string]enums.IndexedValueType{"TeamCost": enums.INDEXED_VALUE_TYPE_INT}
	var conflict *SearchAttributeConflictError
	if _, err := SetupNamespace(ctx, conflicting); !errors.As(err, &conflict) || conflict.Name != "TeamCost" {
		t.Errorf("setup with TeamCost as Int = %v, want SearchAttributeConflictError", err)
	}

	// The server's answer, not a timeout: a refused retention is no
	// reason to wait.
	short := o
	short.Namespace, short.Retention = "brief", time.Minute
	start := time.Now()
	var invalid *serviceerror.InvalidArgument
	if _, err := SetupNamespace(ctx, short); !errors.As(err, &invalid) {
		t.Errorf("setup with a retention of a minute = %v, want the server's InvalidArgument", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Errorf("a refused retention took %s to report", waited)
	}
}
