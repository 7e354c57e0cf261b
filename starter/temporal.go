package starter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/devserver"
	"github.com/autocoder/autocoder/internal/taskclient"
)

// SetupNamespaceOptions are temporal setup-namespace's arguments.
type SetupNamespaceOptions struct {
	Retention time.Duration
	Timeout   time.Duration
}

// NewCmdTemporal groups the commands that prepare a Temporal cluster of
// one's own (docker-compose.yml runs them); local mode needs none of them.
func NewCmdTemporal(f *Factory, runF func(*SetupNamespaceOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "temporal",
		Short: "Prepare a Temporal cluster for autocoder's workers (local mode prepares its own)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newCmdSetupNamespace(f, runF))
	return cmd
}

func newCmdSetupNamespace(f *Factory, runF func(*SetupNamespaceOptions) error) *cobra.Command {
	o := SetupNamespaceOptions{Retention: 30 * 24 * time.Hour, Timeout: 2 * time.Minute}
	cmd := &cobra.Command{
		Use:   "setup-namespace",
		Short: "Register the namespace (temporal.namespace) and the search attributes autocoder uses; changes nothing when they exist",
		Long: "Waits until the Temporal frontend at temporal.address serves, registers temporal.namespace with\n" +
			"--retention when it is missing, and adds the search attributes the task list filters on. Running it\n" +
			"again changes nothing, so a deployment may run it on every start.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !f.cfg.addressSet {
				return usageError("setup-namespace prepares a Temporal cluster of your own, and temporal.address is not set: "+
					"set %s to its frontend (host:port); local mode sets up its own namespace", envTemporalAddress)
			}
			if runF != nil {
				return runF(&o)
			}
			return f.setupNamespace(cmd.Context(), o)
		},
	}
	cmd.Flags().DurationVar(&o.Retention, "retention", o.Retention, "how long finished tasks' histories are kept; applies when the namespace is created")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for the frontend to serve")
	return cmd
}

func (f *Factory) setupNamespace(ctx context.Context, o SetupNamespaceOptions) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ns, addr := f.cfg.Namespace, f.cfg.TemporalAddress
	created, err := devserver.SetupNamespace(ctx, devserver.NamespaceOptions{
		HostPort:         addr,
		Namespace:        ns,
		Retention:        o.Retention,
		SearchAttributes: taskclient.SearchAttributes,
		Logger:           slog.Default(),
	})
	var conflict *devserver.SearchAttributeConflictError
	if errors.As(err, &conflict) {
		return fmt.Errorf("namespace %s at %s: %w; use a namespace of its own for autocoder (temporal.namespace)", ns, addr, err)
	}
	if err != nil {
		return fmt.Errorf("%w: set up namespace %s at %s: %v; check that Temporal runs there (its log says why it does not serve)",
			errUnavailable, ns, addr, err)
	}
	state := "exists"
	if created {
		state = fmt.Sprintf("created, keeping finished tasks %s", o.Retention)
	}
	fmt.Fprintf(f.IO.Out, "namespace %s at %s: %s; search attributes %s\n", ns, addr, state, strings.Join(slices.Sorted(maps.Keys(taskclient.SearchAttributes)), ", "))
	return nil
}
