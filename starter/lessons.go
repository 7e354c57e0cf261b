package starter

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/termsafe"
)

// LessonsOptions are the arguments of the lessons commands.
type LessonsOptions struct {
	JSON  bool
	Kind  string // list
	Limit int    // list
	ID    string // show, forget
}

// NewCmdLessons groups lessons list, show and forget; runF, when set, gets
// the options of whichever runs, with the command's name.
func NewCmdLessons(f *Factory, runF func(name string, o *LessonsOptions) error) *cobra.Command {
	var o LessonsOptions
	asJSON, kind, limit := &o.JSON, &o.Kind, &o.Limit
	cmd := &cobra.Command{
		Use:   "lessons",
		Short: "Inspect what autocoder has learned: verified fixes, failure records, success patterns",
	}
	cmd.PersistentFlags().BoolVar(asJSON, "json", false, "print JSON")
	// intercept hands the parsed options to runF instead of running.
	intercept := func(run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.ID = args[0]
			}
			if runF != nil {
				return runF(cmd.Name(), &o)
			}
			return run(cmd, args)
		}
	}

	list := &cobra.Command{
		Use:   "list",
		Short: "List lessons, most recently updated first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			kind, limit := *kind, *limit
			if kind != "" && kind != store.LessonFix && kind != store.LessonFailure && kind != store.LessonSuccess {
				return usageError("--kind %q: want fix, failure or success", kind)
			}
			if limit < 1 {
				return usageError("--limit %d: want 1 or more", limit)
			}
			st, err := f.Store(cmd.Context())
			if err != nil {
				return err
			}
			ls, err := st.ListLessons(cmd.Context(), kind, limit)
			if err != nil {
				return fmt.Errorf("list lessons: %w", err)
			}
			if *asJSON {
				return writeJSON(f.IO.Out, ls)
			}
			tw := tabwriter.NewWriter(f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tLANG\tSIGNATURE\tRECALLED\tHELPED\tMISLED\tFAILED CHECKS\tUPDATED\tTASK")
			for _, l := range ls {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", l.ID[:12], l.Kind, l.Language, orDefault(termsafe.Line(l.SigKind), "-"),
					l.Recalled, l.Succeeded, l.Misled, l.FailedChecks, l.UpdatedAt.Local().Format(time.DateTime), termsafe.Clip(l.Task, 50))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(kind, "kind", "", "only this kind: fix, failure or success")
	list.Flags().IntVar(limit, "limit", 50, "at most this many")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one lesson (an id prefix from `lessons list` is enough)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := findLesson(cmd.Context(), f, args[0])
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(f.IO.Out, l)
			}
			printLesson(f.IO.Out, l)
			return nil
		},
	}
	forget := &cobra.Command{
		Use:   "forget ID",
		Short: "Delete a lesson so it is never recalled again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := findLesson(cmd.Context(), f, args[0])
			if err != nil {
				return err
			}
			st, _ := f.Store(cmd.Context())
			if err := st.ForgetLesson(cmd.Context(), l.ID); err != nil {
				return fmt.Errorf("forget lesson: %w", err)
			}
			fmt.Fprintf(f.IO.ErrOut, "forgot lesson %s\n", l.ID)
			return nil
		},
	}
	for _, c := range []*cobra.Command{list, show, forget} {
		c.RunE = intercept(c.RunE)
	}
	cmd.AddCommand(list, show, forget)
	return cmd
}

// errLessonNotFound maps to the not-found exit code.
var errLessonNotFound = fmt.Errorf("lesson %w", store.ErrNotFound)

// findLesson resolves a full id or a unique prefix of one.
func findLesson(ctx context.Context, f *Factory, id string) (store.Lesson, error) {
	st, err := f.Store(ctx)
	if err != nil {
		return store.Lesson{}, err
	}
	if l, err := st.GetLesson(ctx, id); err == nil {
		return l, nil
	}
	all, err := st.ListLessons(ctx, "", 100000)
	if err != nil {
		return store.Lesson{}, fmt.Errorf("list lessons: %w", err)
	}
	var match []store.Lesson
	for _, l := range all {
		if len(id) >= 4 && len(l.ID) >= len(id) && l.ID[:len(id)] == id {
			match = append(match, l)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return store.Lesson{}, fmt.Errorf("%w: no lesson with id %q", errLessonNotFound, id)
	default:
		return store.Lesson{}, usageError("id prefix %q matches %d lessons", id, len(match))
	}
}

// printLesson shows one lesson, leaving out the fields it does not have.
// A success lesson keeps the plan that worked where a fix keeps the change.
func printLesson(w io.Writer, l store.Lesson) {
	field := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-11s %s\n", name+":", termsafe.Line(value))
		}
	}
	block := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%s:\n%s\n", name, indent(termsafe.Text(value)))
		}
	}
	field("id", l.ID)
	field("kind", l.Kind)
	field("language", l.Language)
	field("signature", strings.Join(slices.DeleteFunc([]string{l.SigKind, l.SigShape}, func(s string) bool { return s == "" }), " | "))
	field("task", l.Task)
	fmt.Fprintf(w, "%-11s %d (helped %d, misled %d; %d checks failed after it)\n", "recalled:", l.Recalled, l.Succeeded, l.Misled, l.FailedChecks)
	if !l.UpdatedAt.IsZero() {
		field("updated", l.UpdatedAt.Local().Format(time.DateTime))
	}
	block("failure", l.FailedExcerpt)
	block("diagnosis", l.Reflection)
	if l.Kind == store.LessonSuccess {
		block("plan", l.Fix)
	} else {
		block("fix", l.Fix)
	}
}
