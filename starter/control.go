package starter

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/workflows"
)

// signalCmd builds a command that sends one signal to a task.
func signalCmd(f *factory, use, short, signal string, args cobra.PositionalArgs, payload func(args []string) (any, error), flags func(*cobra.Command)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := payload(args)
			if err != nil {
				return err
			}
			return sendSignal(cmd.Context(), f, args[0], signal, p)
		},
	}
	if flags != nil {
		flags(cmd)
	}
	return cmd
}

func sendSignal(ctx context.Context, f *factory, id, signal string, payload any) error {
	c, err := f.Client(ctx)
	if err != nil {
		return err
	}
	if err := c.SignalWorkflow(ctx, id, "", signal, payload); err != nil {
		return fmt.Errorf("send %s to task %s: %w", signal, id, err)
	}
	fmt.Fprintf(f.stderr, "sent %s to task %s\n", signal, id)
	return nil
}

func newApproveCmd(f *factory) *cobra.Command {
	var comment string
	return signalCmd(f, "approve ID", "Approve what a task is waiting for (plan, flagged code, budget, more iterations)",
		workflows.SignalApprove, cobra.ExactArgs(1),
		func([]string) (any, error) { return workflows.ApproveSignal{Comment: comment}, nil },
		func(c *cobra.Command) { c.Flags().StringVar(&comment, "comment", "", "note kept with the approval") })
}

func newRejectCmd(f *factory) *cobra.Command {
	var reason string
	return signalCmd(f, "reject ID", "Reject what a task is waiting for; the reason guides the next attempt",
		workflows.SignalReject, cobra.ExactArgs(1),
		func([]string) (any, error) { return workflows.RejectSignal{Reason: reason}, nil },
		func(c *cobra.Command) { c.Flags().StringVar(&reason, "reason", "", "why (sent to the model)") })
}

func newFeedbackCmd(f *factory) *cobra.Command {
	return signalCmd(f, "feedback ID TEXT", "Give a task guidance; it reaches the next prompt",
		workflows.SignalFeedback, cobra.ExactArgs(2),
		func(args []string) (any, error) { return workflows.FeedbackSignal{Text: args[1]}, nil }, nil)
}

func newCancelCmd(f *factory) *cobra.Command {
	var reason string
	var force bool
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Stop a task after its current step, keeping its checkpoints (--force: at once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !force {
				return sendSignal(cmd.Context(), f, args[0], workflows.SignalCancel, workflows.CancelSignal{Reason: reason})
			}
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			if err := c.CancelWorkflow(cmd.Context(), args[0], ""); err != nil {
				return fmt.Errorf("cancel task %s: %w", args[0], err)
			}
			fmt.Fprintf(f.stderr, "cancellation requested for task %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, kept in the task's status")
	cmd.Flags().BoolVar(&force, "force", false, "cancel through Temporal at once, interrupting the running activity")
	return cmd
}

func newRollbackCmd(f *factory) *cobra.Command {
	var to int
	var feedback string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "rollback ID --to N",
		Short: "Move a running task back to checkpoint N and continue from there",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to < 1 {
				return usageError("--to %d: checkpoints are numbered from 1 (see autocoder status %s)", to, args[0])
			}
			ctx := cmd.Context()
			c, err := f.Client(ctx)
			if err != nil {
				return err
			}
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
				WorkflowID:   args[0],
				UpdateName:   workflows.UpdateRollback,
				Args:         []any{workflows.RollbackRequest{Checkpoint: to, Feedback: feedback}},
				WaitForStage: client.WorkflowUpdateStageCompleted,
			})
			if err != nil {
				return fmt.Errorf("rollback task %s: %w", args[0], err)
			}
			var st workflows.Status
			if err := h.Get(ctx, &st); err != nil {
				var rejected *temporal.ApplicationError
				if errors.As(err, &rejected) {
					// The task refused the request: no such checkpoint, or it has ended.
					return usageError("rollback task %s: %s", args[0], rejected.Message())
				}
				return fmt.Errorf("rollback task %s: %w", args[0], err)
			}
			if asJSON {
				return writeJSON(f.stdout, st)
			}
			fmt.Fprintf(f.stderr, "task %s continues from checkpoint %d\n", args[0], to)
			printStatus(f.stdout, args[0], st)
			return nil
		},
	}
	cmd.Flags().IntVar(&to, "to", 0, "checkpoint number (see `autocoder status`)")
	cmd.Flags().StringVar(&feedback, "feedback", "", "guidance for the attempts after the rollback")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new status as JSON")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func newWatchCmd(f *factory) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Show a task live until it is done or waits for approval (asks inline on a terminal)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			return follow(cmd.Context(), f, c, args[0], followOptions{json: asJSON, interactive: true, noFiles: true, untilWait: !isTerminal(f.stderr)})
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newResumeCmd(f *factory) *cobra.Command {
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Re-attach to a running or waiting task, follow it and write its files when done",
		Long: "Re-attach to a running or waiting task. In local mode (no TEMPORAL_ADDRESS), resume starts\n" +
			"the data dir's local server if it is not running, and the task continues where it was.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stop, err := f.hostIfNeeded(cmd.Context())
			if err != nil {
				return err
			}
			defer stop()
			c, err := f.Client(cmd.Context())
			if err != nil {
				return err
			}
			return follow(cmd.Context(), f, c, args[0], followOptions{out: out, json: asJSON, interactive: true})
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory for the final files (default ./<task id>)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
