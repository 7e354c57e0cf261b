package activities

import (
	"context"
	"fmt"
	"strings"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/signature"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/workspace"
)

// Recall bounds: how many lessons, and how much prompt they may take
// (about 1,500 tokens).
const (
	recallK         = 3
	lessonBudget    = 6000
	fixExcerptBytes = 1500
	outExcerptBytes = 800
)

// RecallInput asks for lessons relevant to a task or, when FailureOutput is
// set, to a failure.
type RecallInput struct {
	Task          string `json:"task"`
	Language      string `json:"language"`
	FailureOutput string `json:"failureOutput,omitempty"`
}

// RecallOutput is the recalled lessons' ids and their text for prompts.
type RecallOutput struct {
	IDs    []string  `json:"ids,omitempty"`
	Scores []float64 `json:"scores,omitempty"`
	Text   string    `json:"text,omitempty"`
}

// recall finds lessons from earlier tasks: by task similarity for a plan,
// by error-signature similarity for a retry.
func (a *Activities) recall(ctx context.Context, in RecallInput) (RecallOutput, error) {
	var found []store.ScoredLesson
	var err error
	if in.FailureOutput != "" {
		sig := signature.Normalize(knownOrNamed(in.Language), in.FailureOutput)
		found, err = a.Store.RecallBySignature(ctx, in.Language, sig.Kind, sig.Shape, sig.Text, recallK)
	} else {
		found, err = a.Store.RecallByTask(ctx, in.Language, in.Task, recallK)
	}
	if err != nil {
		return RecallOutput{}, fmt.Errorf("recall lessons: %w", err)
	}
	var out RecallOutput
	var b strings.Builder
	for _, l := range found {
		entry := lessonText(l)
		if b.Len()+len(entry) > lessonBudget {
			break
		}
		b.WriteString(entry)
		out.IDs = append(out.IDs, l.ID)
		out.Scores = append(out.Scores, l.Score)
	}
	out.Text = b.String()
	return out, nil
}

func lessonText(l store.ScoredLesson) string {
	var b strings.Builder
	switch l.Kind {
	case store.LessonSuccess:
		fmt.Fprintf(&b, "- A similar task (%q) passed first time with this plan:\n%s\n", clip(l.Task, 200), indentText(l.Fix))
	default:
		fmt.Fprintf(&b, "- Task %q failed with:\n%s\n", clip(l.Task, 200), indentText(clip(l.FailedExcerpt, 400)))
		if l.Reflection != "" {
			fmt.Fprintf(&b, "  Diagnosis: %s\n", clip(strings.ReplaceAll(l.Reflection, "\n", " "), 400))
		}
		fmt.Fprintf(&b, "  The change that made the tests pass:\n%s\n", indentText(l.Fix))
	}
	return b.String()
}

func indentText(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// Fix is a verified fix: a failed attempt and the passing one after it.
type Fix struct {
	FailedSnapshot string `json:"failedSnapshot"`
	PassedSnapshot string `json:"passedSnapshot"`
	FailureOutput  string `json:"failureOutput"`
	Reflection     string `json:"reflection,omitempty"`
}

// SaveLessonsInput is what a finished task teaches.
type SaveLessonsInput struct {
	Task     string   `json:"task"`
	Language string   `json:"language"`
	Plan     []string `json:"plan,omitempty"`
	Fixes    []Fix    `json:"fixes,omitempty"`
	// Unfixed are failure outputs no later attempt fixed.
	Unfixed []string `json:"unfixed,omitempty"`
	// FirstTry is set when every step passed on its first attempt.
	FirstTry bool `json:"firstTry,omitempty"`
	// Recalled lessons are credited or debited by Succeeded, and charged
	// with the checks that failed after each was recalled (FailedAfter, in
	// Recalled's order; missing counts are 0).
	Recalled    []string `json:"recalled,omitempty"`
	FailedAfter []int    `json:"failedAfter,omitempty"`
	Succeeded   bool     `json:"succeeded"`
	// Findings is set when a check of the task found code the safety
	// policy denies or a change to the user's tests. Such a task teaches
	// nothing: its plan or fix would be recalled into other tasks, and its
	// outcome says nothing of the lessons it recalled.
	Findings bool `json:"findings,omitempty"`
}

// SaveLessons stores verified fixes as lessons, unfixed failures as
// records, a first-try success as a pattern, and the outcome of the lessons
// recalled. Lessons are upserted by content, so a retry changes nothing.
func (a *Activities) SaveLessons(ctx context.Context, in SaveLessonsInput) ([]string, error) {
	if in.Findings {
		activity.GetLogger(ctx).Info("no lessons from a task with policy or integrity findings")
		return nil, nil
	}
	var lessons []store.Lesson
	for _, fx := range in.Fixes {
		failed, err := a.loadFiles(ctx, fx.FailedSnapshot)
		if err != nil {
			return nil, err
		}
		passed, err := a.loadFiles(ctx, fx.PassedSnapshot)
		if err != nil {
			return nil, err
		}
		diff := clip(fileSetDiff(failed, passed), fixExcerptBytes)
		if diff == "" {
			continue // nothing changed: the pass was not this change's doing
		}
		lessons = append(lessons, a.failureLesson(store.LessonFix, in, fx.FailureOutput, diff, fx.Reflection))
	}
	for _, out := range in.Unfixed {
		lessons = append(lessons, a.failureLesson(store.LessonFailure, in, out, "", ""))
	}
	if in.FirstTry && len(in.Plan) > 0 {
		lessons = append(lessons, store.Lesson{Kind: store.LessonSuccess, Language: in.Language, Task: in.Task, Fix: numberedPlan(in.Plan)})
	}
	var ids []string
	for _, l := range lessons {
		id, err := a.Store.SaveLesson(ctx, l)
		if err != nil {
			return nil, fmt.Errorf("save lesson: %w", err)
		}
		ids = append(ids, id)
	}
	if len(in.Recalled) > 0 {
		if err := a.Store.MarkRecalled(ctx, in.recalls(), in.Succeeded); err != nil {
			return nil, fmt.Errorf("mark recalled lessons: %w", err)
		}
	}
	return ids, nil
}

func (in SaveLessonsInput) recalls() []store.Recall {
	out := make([]store.Recall, len(in.Recalled))
	for i, id := range in.Recalled {
		out[i].ID = id
		if i < len(in.FailedAfter) {
			out[i].FailedChecks = in.FailedAfter[i]
		}
	}
	return out
}

func (a *Activities) failureLesson(kind string, in SaveLessonsInput, output, fix, reflection string) store.Lesson {
	sig := signature.Normalize(knownOrNamed(in.Language), output)
	return store.Lesson{
		Kind: kind, Language: in.Language, Task: in.Task,
		SigKind: sig.Kind, SigShape: sig.Shape, SigText: sig.Text,
		FailedExcerpt: tail(output, outExcerptBytes), Fix: fix, Reflection: clip(reflection, 1000),
	}
}

func numberedPlan(steps []string) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, s)
	}
	return b.String()
}

// fileSetDiff describes how after differs from before, file by file, as
// unified-style line changes.
func fileSetDiff(before, after []workspace.File) string {
	old := map[string]string{}
	for _, f := range before {
		old[f.Path] = string(f.Data)
	}
	var b strings.Builder
	seen := map[string]bool{}
	for _, f := range after {
		seen[f.Path] = true
		prev, existed := old[f.Path]
		if existed && prev == string(f.Data) {
			continue
		}
		fmt.Fprintf(&b, "--- %s\n+++ %s\n", f.Path, f.Path)
		b.WriteString(lineDiff(prev, string(f.Data)))
	}
	for _, f := range before {
		if !seen[f.Path] {
			fmt.Fprintf(&b, "deleted %s\n", f.Path)
		}
	}
	return b.String()
}

// lineDiff lists removed (-) and added (+) lines by longest common
// subsequence; big files fall back to the whole new text.
func lineDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	if len(x)*len(y) > 250_000 {
		return "+" + strings.Join(y, "\n+") + "\n"
	}
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			i++
			j++
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out.WriteString("-" + x[i] + "\n")
			i++
		default:
			out.WriteString("+" + y[j] + "\n")
			j++
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
