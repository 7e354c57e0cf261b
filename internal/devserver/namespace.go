package devserver

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/types/known/durationpb"
)

// NamespaceOptions name a namespace of a running Temporal cluster and what
// it must hold.
type NamespaceOptions struct {
	// HostPort is the cluster's frontend.
	HostPort  string
	Namespace string
	// Retention applies when the namespace is created; zero means
	// DefaultRetention.
	Retention        time.Duration
	SearchAttributes map[string]enums.IndexedValueType
	// Logger receives the SDK's warnings; nil means slog.Default().
	Logger *slog.Logger
}

// SetupNamespace prepares a namespace of a Temporal cluster the way Start
// prepares local mode's: it waits until the frontend serves, registers the
// namespace when it is missing, and ensures the search attributes, waiting
// until they are usable. It reports whether it created the namespace;
// running it again changes nothing. ctx bounds the whole wait.
func SetupNamespace(ctx context.Context, o NamespaceOptions) (created bool, err error) {
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c, err := dialFrontend(ctx, o.HostPort, o.Namespace, quiet(o.Logger))
	if err != nil {
		return false, err
	}
	defer c.Close()
	err = poll(ctx, "register namespace "+o.Namespace, func(ctx context.Context) error {
		_, err := c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        o.Namespace,
			WorkflowExecutionRetentionPeriod: durationpb.New(o.Retention),
		})
		var exists *serviceerror.NamespaceAlreadyExists
		var invalid *serviceerror.InvalidArgument
		switch {
		case err == nil:
			created = true
			return nil
		case errors.As(err, &exists):
			return nil
		case errors.As(err, &invalid):
			return permanent{err}
		}
		return err
	})
	if err != nil {
		return false, err
	}
	if err := awaitNamespace(ctx, c, o.Namespace); err != nil {
		return created, err
	}
	return created, ensureSearchAttributes(ctx, c, o.Namespace, o.SearchAttributes)
}
