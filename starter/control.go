package starter

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/workflows"
)

// ApproveOptions are approve's arguments.
type ApproveOptions struct {
	ID      string
	Comment string
}

func NewCmdApprove(f *Factory, runF func(*ApproveOptions) error) *cobra.Command {
	var o ApproveOptions
	cmd := &cobra.Command{
		Use:   "approve ID",
		Short: "Approve what a task is waiting for (plan, flagged code, budget, more iterations, a command)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(&o)
			}
			return sendSignal(cmd.Context(), f, o.ID, workflows.SignalApprove, func(c TaskClient) error {
				return c.Approve(cmd.Context(), o.ID, workflows.ApproveSignal{Comment: o.Comment})
			})
		},
	}
	cmd.Flags().StringVar(&o.Comment, "comment", "", "note kept with the approval")
	return cmd
}

// RejectOptions are reject's arguments.
type RejectOptions struct {
	ID     string
	Reason string
}

func NewCmdReject(f *Factory, runF func(*RejectOptions) error) *cobra.Command {
	var o RejectOptions
	cmd := &cobra.Command{
		Use:   "reject ID",
		Short: "Reject what a task is waiting for; the reason guides the next attempt",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(&o)
			}
			return sendSignal(cmd.Context(), f, o.ID, workflows.SignalReject, func(c TaskClient) error {
				return c.Reject(cmd.Context(), o.ID, workflows.RejectSignal{Reason: o.Reason})
			})
		},
	}
	cmd.Flags().StringVar(&o.Reason, "reason", "", "why (sent to the model)")
	return cmd
}

// FeedbackOptions are feedback's arguments.
type FeedbackOptions struct {
	ID   string
	Text string
}

func NewCmdFeedback(f *Factory, runF func(*FeedbackOptions) error) *cobra.Command {
	var o FeedbackOptions
	return &cobra.Command{
		Use:   "feedback ID TEXT",
		Short: "Give a task guidance; it reaches the model before its next turn",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID, o.Text = args[0], args[1]
			if runF != nil {
				return runF(&o)
			}
			return sendSignal(cmd.Context(), f, o.ID, workflows.SignalFeedback, func(c TaskClient) error {
				return c.Feedback(cmd.Context(), o.ID, workflows.FeedbackSignal{Text: o.Text})
			})
		},
	}
}

// sendSignal sends one signal through send and says so.
func sendSignal(ctx context.Context, f *Factory, id, name string, send func(TaskClient) error) error {
	c, err := f.TaskClient(ctx)
	if err != nil {
		return err
	}
	if err := send(c); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "sent %s to task %s\n", name, id)
	return nil
}

// CancelOptions are cancel's arguments.
type CancelOptions struct {
	ID     string
	Reason string
	Force  bool
}

func NewCmdCancel(f *Factory, runF func(*CancelOptions) error) *cobra.Command {
	var o CancelOptions
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Stop a task after its current step, keeping its checkpoints (--force: at once)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(&o)
			}
			ctx := cmd.Context()
			if !o.Force {
				return sendSignal(ctx, f, o.ID, workflows.SignalCancel, func(c TaskClient) error {
					return c.Cancel(ctx, o.ID, workflows.CancelSignal{Reason: o.Reason})
				})
			}
			c, err := f.TaskClient(ctx)
			if err != nil {
				return err
			}
			if err := c.CancelNow(ctx, o.ID); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.ErrOut, "cancellation requested for task %s\n", o.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Reason, "reason", "", "why, kept in the task's status")
	cmd.Flags().BoolVar(&o.Force, "force", false, "cancel through Temporal at once, interrupting the running activity")
	return cmd
}

// RollbackOptions are rollback's arguments.
type RollbackOptions struct {
	ID       string
	To       int
	Feedback string
	JSON     bool
}

func NewCmdRollback(f *Factory, runF func(*RollbackOptions) error) *cobra.Command {
	var o RollbackOptions
	cmd := &cobra.Command{
		Use:   "rollback ID --to N",
		Short: "Move a running task back to checkpoint N and continue from there",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if o.To < 1 {
				return usageError("--to %d: checkpoints are numbered from 1 (see autocoder status %s)", o.To, o.ID)
			}
			if runF != nil {
				return runF(&o)
			}
			return rollback(cmd.Context(), f, &o)
		},
	}
	cmd.Flags().IntVar(&o.To, "to", 0, "checkpoint number, as autocoder status lists them")
	cmd.Flags().StringVar(&o.Feedback, "feedback", "", "guidance for the attempts after the rollback")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the new status as JSON")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func rollback(ctx context.Context, f *Factory, o *RollbackOptions) error {
	c, err := f.TaskClient(ctx)
	if err != nil {
		return err
	}
	st, err := c.Rollback(ctx, o.ID, workflows.RollbackRequest{Checkpoint: o.To, Feedback: o.Feedback})
	var rejected *taskclient.RejectedError
	if errors.As(err, &rejected) {
		// The task refused the request: no such checkpoint, or it has ended.
		return usageError("%s", rejected.Error())
	}
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSON(f.IO.Out, st)
	}
	fmt.Fprintf(f.IO.ErrOut, "task %s continues from checkpoint %d\n", o.ID, o.To)
	printStatus(f.IO.Out, o.ID, st)
	return nil
}

// WatchOptions are watch's arguments.
type WatchOptions struct {
	ID   string
	JSON bool
}

func NewCmdWatch(f *Factory, runF func(*WatchOptions) error) *cobra.Command {
	var o WatchOptions
	cmd := &cobra.Command{
		Use:   "watch ID",
		Short: "Show a task live until it is done or waits for approval (asks inline on a terminal)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(&o)
			}
			c, err := f.TaskClient(cmd.Context())
			if err != nil {
				return err
			}
			return follow(cmd.Context(), f, c, o.ID, followOptions{json: o.JSON, interactive: true, noFiles: true, untilWait: !f.IO.ErrTTY})
		},
	}
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}

// resumeOut is where resume writes the task's files: --out, else the
// project the task was started on, as run writes there. A project that is
// not here (a task started on another machine) is not made anew.
func resumeOut(ctx context.Context, c TaskClient, o *ResumeOptions) (string, error) {
	if o.Out != "" {
		return o.Out, nil
	}
	dir, err := c.ProjectDir(ctx, o.ID)
	if err != nil || dir == "" {
		return "", err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", usageError("task %s works on %s, which is not a directory here; write its files elsewhere with --out DIR", o.ID, dir)
	}
	return dir, nil
}

// ResumeOptions are resume's arguments.
type ResumeOptions struct {
	ID   string
	Out  string
	JSON bool
}

func NewCmdResume(f *Factory, runF func(*ResumeOptions) error) *cobra.Command {
	var o ResumeOptions
	cmd := &cobra.Command{
		Use:   "resume ID",
		Short: "Re-attach to a running or waiting task, follow it and write its files when done",
		Long: "Re-attach to a running or waiting task. In local mode (no TEMPORAL_ADDRESS), resume starts\n" +
			"the data dir's local server if it is not running, and the task continues where it was.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(&o)
			}
			f.need = needWorker
			stop, err := f.hostIfNeeded(cmd.Context())
			if err != nil {
				return err
			}
			defer stop()
			c, err := f.TaskClient(cmd.Context())
			if err != nil {
				return err
			}
			out, err := resumeOut(cmd.Context(), c, &o)
			if err != nil {
				return err
			}
			return follow(cmd.Context(), f, c, o.ID, followOptions{out: out, json: o.JSON, interactive: true})
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "directory for the final files (default: the task's --dir, else ./<task id>)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the result as JSON")
	return cmd
}
