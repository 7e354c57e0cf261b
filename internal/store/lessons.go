package store

import (
	"context"
	"time"
)

// Kinds of lesson.
const (
	// LessonFix is a verified fix: a failed attempt and the change that then
	// made the tests pass. Only fixes are recalled for failures.
	LessonFix = "fix"
	// LessonFailure records a failure that was never fixed, for statistics.
	LessonFailure = "failure"
	// LessonSuccess records a first-try success: task → plan outline.
	LessonSuccess = "success"
)

// Lesson is what one task taught.
type Lesson struct {
	ID       string // assigned by the store: hex sha256 of Key()
	Kind     string // LessonFix, LessonFailure or LessonSuccess
	Language string

	// The error signature of the failure (empty for successes).
	SigKind  string // e.g. "python:AssertionError"
	SigShape string // normalized message
	SigText  string // key lines, for similarity

	Task          string // task summary
	FailedExcerpt string // the failing output, trimmed
	Fix           string // what changed (a diff excerpt) or, for successes, the plan outline
	Reflection    string // the diagnosis that led to the fix

	Recalled  int // times injected into a prompt
	Succeeded int // of those, times the task then passed
	Misled    int // of those, times it did not
	// FailedChecks counts the checks that failed in those tasks after the
	// lesson was recalled: a task that passed at last still says how much
	// the lesson helped.
	FailedChecks int

	CreatedAt time.Time
	UpdatedAt time.Time
}

// Recall is a lesson recalled into a task and the checks of the task that
// failed after it was.
type Recall struct {
	ID           string
	FailedChecks int
}

// ScoredLesson is a recall result; higher Score is better.
type ScoredLesson struct {
	Lesson
	Score float64
}

// LessonStore is the lesson half of the Store contract.
type LessonStore interface {
	// SaveLesson upserts by (Kind, Language, SigKind, SigShape, Fix): saving
	// the same lesson twice (an activity retried) changes nothing but
	// UpdatedAt. It returns the lesson's id.
	SaveLesson(ctx context.Context, l Lesson) (string, error)
	// RecallByTask ranks success and fix lessons of the language by the
	// similarity of their Task to task.
	RecallByTask(ctx context.Context, language, task string, k int) ([]ScoredLesson, error)
	// RecallBySignature ranks fix lessons of the language by similarity of
	// their signature to the given one (kind match, then shape/text).
	RecallBySignature(ctx context.Context, language, sigKind, sigShape, sigText string, k int) ([]ScoredLesson, error)
	// MarkRecalled counts a recall of each lesson, the task's outcome and
	// the checks that failed after the recall.
	MarkRecalled(ctx context.Context, recalls []Recall, succeeded bool) error
	GetLesson(ctx context.Context, id string) (Lesson, error) // ErrNotFound when absent
	ListLessons(ctx context.Context, kind string, limit int) ([]Lesson, error)
	ForgetLesson(ctx context.Context, id string) error // ErrNotFound when absent
}
