package workflows

import (
	"time"

	"github.com/autocoder/autocoder/activities"
)

// Names shared by the workflow, the worker and the CLI. A person can use the
// signal and query names from the Temporal Web UI or `temporal workflow`.
const (
	TaskQueue    = "autocoder"
	WorkflowName = "CodingTask"
	QueryStatus  = "status"
)

// Default bounds for a task.
const (
	DefaultMaxIterations = 6
)

// Phase is where a task is in its story.
type Phase string

const (
	PhaseStarting   Phase = "starting"
	PhasePlanning   Phase = "planning"
	PhaseGenerating Phase = "generating"
	PhaseValidating Phase = "validating"
	PhaseExecuting  Phase = "executing"
	PhaseReflecting Phase = "reflecting"
	PhaseSucceeded  Phase = "succeeded"
	PhaseFailed     Phase = "failed"
	PhaseCancelled  Phase = "cancelled"
)

// Done reports whether the phase is final.
func (p Phase) Done() bool {
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseCancelled
}

// TaskInput is what a user asks for.
type TaskInput struct {
	Task     string `json:"task"`
	Language string `json:"language"` // python or go
	// TestCmd is the user's ground truth. Empty means the model writes the
	// tests and the language's default command runs them.
	TestCmd string `json:"testCmd,omitempty"`
	// InputSnapshot is the snapshot id of an existing workspace, if any.
	InputSnapshot string `json:"inputSnapshot,omitempty"`
	MaxIterations int    `json:"maxIterations,omitempty"`
	Model         string `json:"model,omitempty"` // provider:model; empty = the worker's default
}

// Checkpoint records the workspace after one attempt.
type Checkpoint struct {
	N          int       `json:"n"` // 1-based
	SnapshotID string    `json:"snapshotId"`
	Step       int       `json:"step"` // 1-based plan step
	Iteration  int       `json:"iteration"`
	Passed     bool      `json:"passed"`
	Summary    string    `json:"summary"`
	Time       time.Time `json:"time"`
}

// Status is what the status query returns.
type Status struct {
	Task          string                  `json:"task"`
	Language      string                  `json:"language"`
	Phase         Phase                   `json:"phase"`
	Plan          []string                `json:"plan,omitempty"`
	Step          int                     `json:"step"` // 1-based; 0 before planning ends
	Iteration     int                     `json:"iteration"`
	MaxIterations int                     `json:"maxIterations"`
	Checkpoints   []Checkpoint            `json:"checkpoints,omitempty"`
	LastTest      *activities.TestSummary `json:"lastTest,omitempty"`
	Usage         activities.Usage        `json:"usage"`
	TestsByModel  bool                    `json:"testsByModel"`
	Error         string                  `json:"error,omitempty"`
}

// TaskResult is the workflow's return value on success.
type TaskResult struct {
	SnapshotID   string `json:"snapshotId"`
	Iterations   int    `json:"iterations"`
	TestsByModel bool   `json:"testsByModel"`
	Status       Status `json:"status"`
}
