package starter

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/taskclient"
	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/workflows"
)

type followOptions struct {
	out         string // where to write the files on success; "" = ./<id>
	json        bool
	interactive bool // ask gate questions inline when on a terminal
	noFiles     bool // watch only: do not write files
	untilWait   bool // return when the task waits for a person
}

// errWaiting ends a non-interactive watch at an approval gate.
var errWaiting = errors.New("waiting for approval")

// follow shows a task's progress until it ends (or waits, when asked), then
// writes its files. On a terminal it redraws one status line and asks gate
// questions inline; piped, it prints a plain line per change.
func follow(ctx context.Context, f *Factory, c TaskClient, id string, o followOptions) error {
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	done := make(chan error, 1)
	var result workflows.TaskResult
	v := newView(f.IO.ErrOut, f.IO.ErrTTY)
	k := newContact(f, id, v.clear)
	go func() { done <- awaitResult(waitCtx, c, id, &result, k.limit) }()
	ask := o.interactive && f.IO.InTTY && f.IO.ErrTTY
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	asked := ""
	var runErr error
	r := retries{w: f.IO.ErrOut, before: v.clear}
	waitsNote := f.settingslessNote(id)
loop:
	for {
		select {
		case runErr = <-done:
			break loop
		case <-ctx.Done():
			v.clear()
			return stoppedFollowing(id, ctx.Err())
		case <-tick.C:
			st, err := queryStatusBounded(ctx, c, id)
			if err != nil {
				if lost := k.check(ctx, c, err); lost != nil {
					return lost
				}
				continue
			}
			k.ok()
			v.show(st)
			if !st.Phase.Done() {
				r.show(ctx, c, id)
				if waitsNote != "" {
					v.clear()
					fmt.Fprintln(f.IO.ErrOut, waitsNote)
					waitsNote = ""
				}
			}
			if st.Pending == nil {
				asked = ""
				continue
			}
			key := st.Pending.Kind + st.Pending.Since.String()
			switch {
			case ask && asked != key:
				asked = key
				v.clear()
				if err := answerGate(ctx, c, id, st.Pending, bufio.NewReader(f.IO.In), f.IO.ErrOut); err != nil {
					return err
				}
			case o.untilWait || !ask:
				if asked != key {
					asked = key
					v.clear()
					printGate(f.IO.ErrOut, id, st.Pending)
				}
				if o.untilWait {
					return errWaiting
				}
			}
		}
	}
	v.clear()
	if st, err := queryStatusBounded(ctx, c, id); err == nil {
		v.final(st)
		result.Status = st
	}
	var fe *taskclient.FailedError
	if errors.As(runErr, &fe) && !fe.Cancelled {
		return failed(f, id, o.json, fe)
	}
	if runErr != nil {
		return endedWithout(ctx, k, runErr)
	}
	n := 0
	out := o.out
	if out == "" {
		out = id
	}
	if !o.noFiles {
		var err error
		if n, err = writeSnapshot(ctx, f, id, result.Status, result.SnapshotID, out, true); err != nil {
			return err
		}
	}
	if o.json {
		return writeJSON(f.IO.Out, map[string]any{"id": id, "out": out, "files": n, "result": result})
	}
	note := " (your tests passed: " + shownCommand(result.Status.TestCmd) + ")"
	if result.TestsByModel {
		note = " (tests written by the model: review them, they decide what passed)"
	}
	fmt.Fprintf(f.IO.Out, "✔ task %s succeeded in %d iteration(s)%s\n", id, result.Iterations, note)
	if o.noFiles {
		fmt.Fprintf(f.IO.Out, "  files: write them with `autocoder export %s DIR`\n", id)
	} else {
		fmt.Fprintf(f.IO.Out, "  %d file(s) written to %s\n", n, out)
	}
	u := result.Status.Usage
	fmt.Fprintf(f.IO.Out, "  tokens: %s, cost %s\n", u.Tokens(), u.Cost())
	if cps := result.Status.Checkpoints; len(cps) > 0 {
		reviewWarnings(f.IO.Out, cps[len(cps)-1]) // the last check judged the whole result
	}
	return nil
}

// endedWithout says why following ended without a result. Only the
// workflow's own failure is the task failing: Ctrl-C arriving with the
// result's wait is the client stopping, and a call that never got an
// answer is lost contact.
func endedWithout(ctx context.Context, k *contact, runErr error) error {
	switch {
	case ctx.Err() != nil && cannotReach(runErr):
		return stoppedFollowing(k.id, ctx.Err())
	case cannotReach(runErr):
		return k.lost(runErr)
	}
	return taskFailure(runErr)
}

// failed reports a task that ended without success: one line naming the
// cause, as its status gives it, and where to look further; Temporal's
// whole error chain only with --verbose, and in the JSON --json prints.
func failed(f *Factory, id string, asJSON bool, fe *taskclient.FailedError) error {
	if asJSON {
		if err := writeJSON(f.IO.Out, map[string]any{"id": id, "error": fe.Message, "detail": fe.Error()}); err != nil {
			return err
		}
	}
	line := fmt.Sprintf("task %s failed: %s; autocoder status %s shows where it stopped", id, fe.Message, id)
	if f.verbose {
		line += "\nthe whole error: " + fe.Error()
	} else {
		line += " (the whole error: --verbose)"
	}
	return &taskEnded{line: line, err: fe}
}

// taskEnded is a failed task as the command reports it; it unwraps to the
// task's *taskclient.FailedError, which decides the exit code.
type taskEnded struct {
	line string
	err  *taskclient.FailedError
}

func (e *taskEnded) Error() string { return e.line }
func (e *taskEnded) Unwrap() error { return e.err }

// retries shows the task's failed attempts as they happen, from its
// pending activities: one line per attempt that failed, with the failure
// and when the next attempt starts.
type retries struct {
	w      io.Writer
	before func() // readies w for a line (ends a redrawn status line)
	shown  map[string]int32
}

// retryLister lists a task's retried activities (taskclient.Client.Retries).
type retryLister interface {
	Retries(ctx context.Context, id string) ([]taskclient.Retry, error)
}

func (r *retries) show(ctx context.Context, c retryLister, id string) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	rs, err := c.Retries(ctx, id)
	if err != nil {
		return // following goes on without them when the server cannot say
	}
	for _, rt := range rs {
		if r.shown[rt.ActivityID] >= rt.Attempt {
			continue
		}
		if r.shown == nil {
			r.shown = map[string]int32{}
		}
		r.shown[rt.ActivityID] = rt.Attempt
		r.before()
		fmt.Fprintln(r.w, describeRetry(rt, time.Now()))
	}
}

// describeRetry is one line for a failed attempt, e.g. "Plan failed: model
// provider openai failed (HTTP 503); attempt 2 of 6 in 1s".
func describeRetry(rt taskclient.Retry, now time.Time) string {
	next := fmt.Sprintf("attempt %d", rt.Attempt)
	if rt.MaxAttempts > 0 {
		next += fmt.Sprintf(" of %d", rt.MaxAttempts)
	}
	if rt.RetryAt.IsZero() {
		next += " started"
	} else {
		next += " in " + max(rt.RetryAt.Sub(now), 0).Round(time.Second).String()
	}
	// The failure may quote the provider: Clip makes it safe to print.
	return fmt.Sprintf("%s failed: %s; %s", rt.Activity, termsafe.Clip(orDefault(rt.LastFailure, "no reason given"), 200), next)
}

func printGate(w io.Writer, id string, p *workflows.Approval) {
	fmt.Fprintf(w, "? task %s is waiting for approval (%s): %s\n", id, p.Kind, termsafe.Line(p.Question))
	if p.Details != "" {
		fmt.Fprintln(w, indent(termsafe.Text(strings.TrimRight(p.Details, "\n"))))
	}
	fmt.Fprintf(w, "  answer with: autocoder approve %s | autocoder reject %s --reason TEXT | autocoder feedback %s TEXT\n", id, id, id)
	fmt.Fprintf(w, "  (no answer by %s counts as a rejection)\n", p.Deadline.Local().Format(time.DateTime))
}

// answerer sends a typed answer to a task's question.
type answerer interface {
	Answer(ctx context.Context, id string, a workflows.Answer, text string) error
}

// answerGate asks the pending question on the terminal until the reply is
// one the workflow says the question accepts, then sends it. An empty reply
// decides nothing: the question is asked again.
func answerGate(ctx context.Context, c answerer, id string, p *workflows.Approval, in *bufio.Reader, w io.Writer) error {
	printGate(w, id, p)
	if len(p.Answers) == 0 {
		return nil // a task that lists no answers is answered with the commands above
	}
	var choices []string
	for _, a := range p.Answers {
		if a.Signal == "" {
			continue // not a choice: it only explains itself when typed
		}
		words := "other text"
		if len(a.Words) > 0 {
			words = strings.Join(a.Words, "/")
		}
		choices = append(choices, fmt.Sprintf("[%s] %s", words, a.Means))
	}
	fmt.Fprintf(w, "  %s\n", strings.Join(choices, " · "))
	for {
		fmt.Fprint(w, "  answer: ")
		line, err := in.ReadString('\n')
		a, ok := p.Match(line)
		if ok && a.Signal != "" {
			return sendAnswer(ctx, c, id, a, strings.TrimSpace(line), w)
		}
		if err != nil {
			return fmt.Errorf("read answer: %w (the task still waits; answer with autocoder approve or reject)", err)
		}
		switch {
		case ok:
			fmt.Fprintf(w, "  %s\n", a.Means)
		case strings.TrimSpace(line) == "":
			fmt.Fprintln(w, "  an empty answer decides nothing; type one of the answers above")
		default:
			fmt.Fprintf(w, "  %q is not an answer here; type one of the answers above\n", strings.TrimSpace(line))
		}
	}
}

func sendAnswer(ctx context.Context, c answerer, id string, a workflows.Answer, text string, w io.Writer) error {
	if err := c.Answer(ctx, id, a, text); err != nil {
		return fmt.Errorf("send %s: %w", a.Signal, err)
	}
	fmt.Fprintf(w, "  sent %s\n", a.Signal)
	return nil
}

// view renders progress: one redrawn line with a bar on a terminal, plain
// lines otherwise.
type view struct {
	w           io.Writer
	tty         bool
	last        string
	checkpoints int
	drawn       bool
	// The bar's furthest point in the current attempt, so that a gate
	// after the check does not move it back.
	attempt [2]int // step, iteration
	peak    float64
}

func newView(w io.Writer, tty bool) *view { return &view{w: w, tty: tty} }

func (v *view) show(st workflows.Status) {
	for _, cp := range st.Checkpoints[min(v.checkpoints, len(st.Checkpoints)):] {
		v.clear()
		mark := "✗"
		if cp.Passed {
			mark = "✓"
		}
		fmt.Fprintf(v.w, "  %s step %d, iteration %d: %s\n", mark, cp.Step, cp.Iteration, termsafe.Line(cp.Summary))
	}
	v.checkpoints = len(st.Checkpoints)
	if v.tty {
		fmt.Fprintf(v.w, "\r\033[K%s %s", progressBar(v.progress(st), 20), statusLine(st))
		v.drawn = true
		return
	}
	if plain := plainLine(st); plain != v.last {
		fmt.Fprintln(v.w, plain)
		v.last = plain
	}
}

// progress is progressOf(st), never less than before in the same attempt.
// A new attempt at the same step (a failed check) starts lower again: the
// step is not as far along as the last attempt made it look.
func (v *view) progress(st workflows.Status) float64 {
	p := progressOf(st)
	if at := [2]int{st.Step, st.Iteration}; at != v.attempt {
		v.attempt, v.peak = at, p
	}
	v.peak = max(v.peak, p)
	return v.peak
}

func (v *view) final(st workflows.Status) {
	v.show(st)
	v.clear()
}

// clear ends a redrawn line so ordinary output can follow.
func (v *view) clear() {
	if v.tty && v.drawn {
		fmt.Fprint(v.w, "\r\033[K")
		v.drawn = false
	}
}

// plainLine changes only when the task moves or spends, so piped output
// stays short and still tells what the task has cost so far. It names the
// model's turn and tool call while an attempt works.
func plainLine(st workflows.Status) string {
	line := placeLine(st)
	if u := st.Usage; u.PromptTokens+u.CompletionTokens > 0 || u.CostUSD > 0 || u.Unpriced > 0 {
		line += " · " + spentText(u)
	}
	return line
}

// placeLine is where the task is: phase, step, iteration, turn and call.
func placeLine(st workflows.Status) string {
	line := fmt.Sprintf("[%s]", st.Phase)
	if st.Step > 0 {
		line += fmt.Sprintf(" step %d/%d · iteration %d/%d", st.Step, len(st.Plan), st.Iteration, st.MaxIterations)
	}
	if turn := turnLine(st); turn != "" {
		line += " · " + turn
	}
	return line
}

// spentText is the tokens so far, and their cost once a model call has one.
func spentText(u activities.Usage) string {
	s := humanCount(u.PromptTokens+u.CompletionTokens) + " tokens"
	if u.CostUSD > 0 || u.Unpriced > 0 {
		s += " · cost " + u.Cost()
	}
	return s
}

func statusLine(st workflows.Status) string {
	parts := []string{placeLine(st)}
	if !st.Started.IsZero() {
		parts = append(parts, time.Since(st.Started).Round(time.Second).String())
	}
	parts = append(parts, spentText(st.Usage))
	if st.LastTest != nil {
		parts = append(parts, termsafe.Line(st.LastTest.Headline()))
	}
	return strings.Join(parts, " · ")
}

// progressOf is how far the task is, from 0 to 1: the plan steps passed,
// and within the current step the attempt's model turns against its turn
// budget. The model's turns are the work we can count while it happens:
// an attempt is checked when the model says it is done or, at the latest,
// when its turns run out, so the turns started are a floor under how near
// the check is. The check stands for one more turn, the budget's last
// slot; a model that finishes early makes the bar jump to it.
func progressOf(st workflows.Status) float64 {
	n := len(st.Plan)
	switch {
	case st.Phase == workflows.PhaseSucceeded || (n > 0 && st.Step > n):
		return 1
	case n == 0 || st.Step < 1:
		return 0
	}
	slots := 2 // one-answer attempts: the answer, then the check
	switch {
	case st.MaxTurns > 0:
		slots = st.MaxTurns + 1 // the turns, then the check
	case st.Turn > 0: // a server that does not say its budget
		slots = workflows.DefaultMaxTurns + 1
	}
	within := min(st.Turn, slots-1)
	if st.Phase == workflows.PhaseChecking || st.Phase == workflows.PhaseExecuting {
		within = slots - 1
	}
	return (float64(st.Step-1) + float64(within)/float64(slots)) / float64(n)
}

// partialBlocks draw a cell's eighths, so that one turn of a long budget
// still moves the bar.
var partialBlocks = []rune("▏▎▍▌▋▊▉")

func progressBar(frac float64, width int) string {
	eighths := max(0, min(width*8, int(frac*float64(width*8))))
	full, part := eighths/8, eighths%8
	bar := strings.Repeat("█", full)
	if part > 0 {
		bar += string(partialBlocks[part-1])
		full++
	}
	return "[" + bar + strings.Repeat("░", width-full) + "]"
}

func humanCount(n int) string {
	if n < 1000 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.1fk", float64(n)/1000)
}

func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	if !ok {
		return false
	}
	info, err := file.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
