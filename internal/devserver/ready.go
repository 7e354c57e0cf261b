package devserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
)

const (
	// startTimeout bounds startup when the caller's context has no deadline.
	startTimeout   = 2 * time.Minute
	pollInterval   = 100 * time.Millisecond
	attemptTimeout = 5 * time.Second
)

// poll runs attempt until it succeeds or ctx ends; every failure but a
// permanent one is taken as "not ready yet" and the last one is reported on
// timeout.
func poll(ctx context.Context, step string, attempt func(context.Context) error) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := attempt(actx)
		cancel()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return fmt.Errorf("%s: %w", step, p.err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", step, errors.Join(context.Cause(ctx), err))
		case <-ticker.C:
		}
	}
}

// permanent is an attempt's failure that waiting does not mend.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

// awaitFrontend waits until the frontend serves the namespace, then ensures
// the custom search attributes.
func (s *Server) awaitFrontend(ctx context.Context, want map[string]enums.IndexedValueType) error {
	c, err := dialFrontend(ctx, s.FrontendAddress(), s.namespace, quiet(s.log))
	if err != nil {
		return err
	}
	defer c.Close()
	if err := awaitNamespace(ctx, c, s.namespace); err != nil {
		return err
	}
	return ensureSearchAttributes(ctx, c, s.namespace, want)
}

// dialFrontend dials a frontend until it accepts the connection.
func dialFrontend(ctx context.Context, hostPort, namespace string, log *slog.Logger) (client.Client, error) {
	var c client.Client
	err := poll(ctx, "dial frontend "+hostPort, func(ctx context.Context) error {
		var err error
		c, err = client.DialContext(ctx, client.Options{
			HostPort:  hostPort,
			Namespace: namespace,
			Logger:    sdklog.NewStructuredLogger(log),
		})
		return err
	})
	return c, err
}

// awaitNamespace waits until the frontend describes the namespace.
func awaitNamespace(ctx context.Context, c services, namespace string) error {
	return poll(ctx, "describe namespace "+namespace, func(ctx context.Context) error {
		_, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
		return err
	})
}

// services is the part of client.Client that ensureSearchAttributes uses.
type services interface {
	OperatorService() operatorservice.OperatorServiceClient
	WorkflowService() workflowservice.WorkflowServiceClient
}

// ensureSearchAttributes registers the wanted custom search attributes that
// the namespace lacks, through the operator service, and waits until they are
// usable: starting workflows and queries resolve them through a namespace
// cache refreshed every few seconds, while the operator service reads the
// database directly.
func ensureSearchAttributes(ctx context.Context, svc services, namespace string, want map[string]enums.IndexedValueType) error {
	if len(want) == 0 {
		return nil
	}
	op := svc.OperatorService()
	have, err := customSearchAttributes(ctx, op, namespace)
	if err != nil {
		return err
	}
	missing := make(map[string]enums.IndexedValueType)
	for name, typ := range want {
		got, ok := have[name]
		switch {
		case !ok:
			missing[name] = typ
		case got != typ:
			return &SearchAttributeConflictError{Name: name, Registered: got, Requested: typ}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add search attributes: %w", err)
	}
	names := make([]string, 0, len(missing))
	for name := range missing {
		names = append(names, "`"+name+"` IS NULL")
	}
	// The query is rejected until every name resolves through the cache.
	query := strings.Join(names, " OR ")
	return poll(ctx, "await search attributes", func(ctx context.Context) error {
		_, err := svc.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: namespace,
			Query:     query,
		})
		return err
	})
}

func customSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, namespace string) (map[string]enums.IndexedValueType, error) {
	resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes: %w", err)
	}
	return resp.GetCustomAttributes(), nil
}
