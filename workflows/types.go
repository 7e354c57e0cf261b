package workflows

import (
	"strings"
	"time"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/policy"
)

// Names shared by the workflow, the worker and the CLI. A person can use the
// signal and query names from the Temporal Web UI or `temporal workflow`.
const (
	TaskQueue    = "autocoder"
	WorkflowName = "CodingTask"
	QueryStatus  = "status"

	// Signals. Payloads are the JSON of the matching types below, e.g.
	// reject: {"reason": "use argparse"}; approve and cancel take {} or none.
	SignalApprove  = "approve"
	SignalReject   = "reject"
	SignalFeedback = "feedback"
	SignalCancel   = "cancel"

	// UpdateRollback takes {"checkpoint": N, "feedback": "..."} and returns
	// the status once the workflow has moved back to checkpoint N.
	UpdateRollback = "rollback"
)

// SandboxTaskQueue is where a task queue's sandbox runs wait: each worker
// takes no more of them than it has sandbox slots, so a run waits in the
// server, where any worker with a free slot takes it, not inside a busy
// worker.
func SandboxTaskQueue(taskQueue string) string { return taskQueue + "-sandbox" }

// Search attributes the workflow keeps current when the namespace has them.
const (
	SearchAttrPhase     = "AutocoderPhase"
	SearchAttrLanguage  = "AutocoderLanguage"
	SearchAttrIteration = "AutocoderIteration"
	SearchAttrCostUSD   = "AutocoderCostUSD"
)

// MemoUsage is the memo field where the workflow keeps the task's tokens
// and cost current (an activities.Usage without the split by model), for
// lists that read no status: a search attribute for each figure would
// take more of the namespace's few numeric ones.
const MemoUsage = "usage"

// Policy modes for safety findings. A task's input without a mode denies:
// tasks recorded before warn was the default replay as they ran, and the
// CLI starts new tasks with PolicyWarn (DefaultPolicy).
const (
	PolicyWarn  = "warn"  // findings are reported for review and fail nothing
	PolicyDeny  = "deny"  // findings fail the attempt and go to reflection
	PolicyAsk   = "ask"   // findings wait for a person to approve or reject
	PolicyAllow = "allow" // findings are ignored; syntax errors still fail

	DefaultPolicy = PolicyWarn
)

// Kinds of approval a task can wait for.
const (
	GatePlan   = "plan"
	GatePolicy = "policy"
	GateBudget = "budget"
	GateStuck  = "stuck"
	// GateCommand asks before a `run` call the allow-list does not cover,
	// and before each `install` call, with TaskInput.ApproveCommands.
	GateCommand = "command"
	// GateIntegrity is in integrity.go.
)

// Default bounds for a task.
const (
	DefaultMaxIterations   = 6
	DefaultApprovalTimeout = 24 * time.Hour
	maxPlanRejections      = 3
)

// Phase is where a task is in its story.
type Phase string

const (
	PhaseStarting   Phase = "starting"
	PhaseSetup      Phase = "setup" // the project's setup command runs
	PhasePlanning   Phase = "planning"
	PhaseGenerating Phase = "generating"
	PhaseExecuting  Phase = "executing"
	PhaseChecking   Phase = "checking"   // validating, then testing, in one activity
	PhaseReflecting Phase = "reflecting" // on the last failure, then writing the retry
	PhaseWaiting    Phase = "waiting"    // for a person: see Status.Pending
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
	Language string `json:"language"` // a name the languages registry knows
	// TestCmd is the user's ground truth. Empty means the model writes the
	// tests and the language's default command runs them.
	TestCmd string `json:"testCmd,omitempty"`
	// InputSnapshot is the snapshot id of an existing workspace, if any.
	InputSnapshot string `json:"inputSnapshot,omitempty"`
	// Setup is the project's setup, a shell command line run once over
	// the input before the model starts (activities.Setup); "" runs none.
	Setup         string `json:"setup,omitempty"`
	MaxIterations int    `json:"maxIterations,omitempty"`
	Model         string `json:"model,omitempty"` // provider:model; empty = the worker's default
	// Fallback are the models (provider:model) that answer, in order, when
	// the one before fails with an outage: Model's fallback chain.
	Fallback []string `json:"fallback,omitempty"`

	// Human gates.
	ApprovePlan     bool          `json:"approvePlan,omitempty"`
	Policy          string        `json:"policy,omitempty"` // warn, deny (when empty), ask or allow
	Allow           []string      `json:"allow,omitempty"`  // policy categories allowed outright
	BudgetTokens    int           `json:"budgetTokens,omitempty"`
	BudgetUSD       float64       `json:"budgetUsd,omitempty"`
	AskWhenStuck    bool          `json:"askWhenStuck,omitempty"`
	ApprovalTimeout time.Duration `json:"approvalTimeout,omitempty"` // default DefaultApprovalTimeout
	// SearchAttributes is set by the starter when the namespace has the
	// custom search attributes registered.
	SearchAttributes bool `json:"searchAttributes,omitempty"`
	// Protect adds globs to the user's tests, which checks run as they
	// were at the start; AllowTestEdits lets attempts change them (a task
	// about the tests themselves).
	Protect        []string `json:"protect,omitempty"`
	AllowTestEdits bool     `json:"allowTestEdits,omitempty"`
	// HistoryLimit continues the task as a new run once its history has
	// this many events (besides when the server suggests it); 0 = only then.
	HistoryLimit int `json:"historyLimit,omitempty"`
	// Agent bounds each attempt's tool loop; zero values are defaults.
	Agent AgentLimits `json:"agent,omitempty"`
	// ApproveCommands has a person approve each `run` call whose command
	// starts with none of CommandAllow's prefixes, and each `install` call.
	ApproveCommands bool     `json:"approveCommands,omitempty"`
	CommandAllow    []string `json:"commandAllow,omitempty"`
	// Notify is the store key of the task's webhooks (notify.Record),
	// which the Notification workflow reads: a webhook's URL is a
	// credential, kept out of the history. Empty: no notifications.
	Notify string `json:"notify,omitempty"`
	// Carried is the state of the previous run after a continue-as-new.
	Carried *State `json:"carried,omitempty"`
}

// AgentLimits bound an attempt's tool loop.
type AgentLimits struct {
	MaxTurns        int `json:"maxTurns,omitempty"`        // model turns per attempt
	MaxOutputTokens int `json:"maxOutputTokens,omitempty"` // per turn
	ContextTokens   int `json:"contextTokens,omitempty"`   // per request, before eliding and summarizing
	ToolOutputBytes int `json:"toolOutputBytes,omitempty"` // a sandbox call's result the model reads
}

// TranscriptRef names one conversation of a task: a plan step's, opened
// again after a rollback.
type TranscriptRef struct {
	ID   string `json:"id"`
	Step int    `json:"step"`
}

// State is what a task carries from one run to the next (continue-as-new):
// everything it knows but its input and what handlers hold only while they
// run. The workflow keeps it in one struct, so nothing is left behind.
type State struct {
	Status Status `json:"status"`
	// Base is the snapshot the next attempt starts from.
	Base   string        `json:"base"`
	Budget Budget        `json:"budget"`
	Cancel *CancelSignal `json:"cancel,omitempty"`
	Memory Memory        `json:"memory"`
	// Reflection is the diagnosis of the last failed attempt, and ReflectOn
	// the failed check the next attempt reflects on first.
	Reflection string                  `json:"reflection,omitempty"`
	ReflectOn  *activities.TestSummary `json:"reflectOn,omitempty"`
	// Conversation is the plan step's conversation with the model, and the
	// attempt under way in it.
	Conversation Conversation `json:"conversation"`
	// Fenced is set once the model proved unable to call tools: from then
	// on attempts ask for fenced file blocks in one answer.
	Fenced bool `json:"fenced,omitempty"`
}

// Conversation names a plan step's conversation; its messages live in the
// store. A retry of the step continues it, so the model sees its own
// earlier work; the step opened again after a rollback starts another.
type Conversation struct {
	Transcript string `json:"transcript,omitempty"` // "" until the step's opens
	Step       int    `json:"step,omitempty"`
	Length     int    `json:"length,omitempty"` // the transcript's length
	// Summary stands for the older turns once they no longer fit.
	Summary *activities.TurnSummary `json:"summary,omitempty"`
	// Guided counts the people's guidance (Status.Feedback) the model has
	// been shown.
	Guided int `json:"guided,omitempty"`
	// Working is set while an attempt is under way: a run that continues
	// as new resumes it at Length, with the workspace as its tool calls
	// left it (Snapshot) and Status.Turn turns made.
	Working  bool   `json:"working,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
}

// Budget is what the task may spend before a person is asked; approval
// adds the original amount again.
type Budget struct {
	Tokens int     `json:"tokens,omitempty"`
	USD    float64 `json:"usd,omitempty"`
}

// Memory is what a task gathers to learn from: recalled lessons for its
// prompts, and the verified fixes it makes.
type Memory struct {
	TaskLessons    string           `json:"taskLessons,omitempty"`
	FailureLessons string           `json:"failureLessons,omitempty"`
	Fixes          []activities.Fix `json:"fixes,omitempty"`
	Pending        *activities.Fix  `json:"pending,omitempty"` // the last failure, until an attempt passes
	Failed         bool             `json:"failed,omitempty"`  // some attempt failed
	// Findings is set once a check finds code the safety policy denies or
	// a change to the user's tests: the task then teaches nothing.
	Findings bool `json:"findings,omitempty"`
	// FailedChecks counts the task's failed checks; RecalledAt holds, for
	// each lesson of Status.Lessons, the count when it was recalled, so a
	// lesson is charged only with the failures that followed it.
	FailedChecks int   `json:"failedChecks,omitempty"`
	RecalledAt   []int `json:"recalledAt,omitempty"`
}

// Signal and update payloads.
type (
	ApproveSignal struct {
		Comment string `json:"comment,omitempty"`
	}
	RejectSignal struct {
		Reason string `json:"reason,omitempty"`
	}
	FeedbackSignal struct {
		Text string `json:"text"`
	}
	CancelSignal struct {
		Reason string `json:"reason,omitempty"`
	}
	RollbackRequest struct {
		Checkpoint int    `json:"checkpoint"`
		Feedback   string `json:"feedback,omitempty"`
	}
)

// Approval is a question waiting for a person.
type Approval struct {
	Kind     string    `json:"kind"` // plan, policy, budget or stuck
	Question string    `json:"question"`
	Details  string    `json:"details,omitempty"`
	Since    time.Time `json:"since"`
	Deadline time.Time `json:"deadline"`
	// Answers are the replies the question accepts, so a prompt need not
	// know each gate's rules. An empty reply is never one of them.
	Answers []Answer `json:"answers,omitempty"`
}

// Answer is one reply a pending question accepts and the signal it sends.
// Words are its typed forms, matched without regard to case; an answer
// without words takes any other text, sent as the reason or guidance. An
// answer without a signal decides nothing: Means says what to type instead.
type Answer struct {
	Words  []string `json:"words,omitempty"`
	Signal string   `json:"signal,omitempty"` // SignalApprove, SignalReject or SignalFeedback
	Means  string   `json:"means"`            // what it does, in a few words
}

// Match returns the answer a typed reply gives, if any: a listed word, or
// else other non-empty text.
func (a *Approval) Match(reply string) (Answer, bool) {
	reply = strings.TrimSpace(reply)
	if reply == "" {
		return Answer{}, false
	}
	for _, ans := range a.Answers {
		for _, w := range ans.Words {
			if strings.EqualFold(reply, w) {
				return ans, true
			}
		}
	}
	for _, ans := range a.Answers {
		if len(ans.Words) == 0 {
			return ans, true
		}
	}
	return Answer{}, false
}

// takesGuidance reports whether feedback sent while the question waits
// answers it.
func (a *Approval) takesGuidance() bool {
	for _, ans := range a.Answers {
		if ans.Signal == SignalFeedback {
			return true
		}
	}
	return false
}

// GateAnswers is what each kind of question accepts; clients read them
// from the pending question, which carries what the running task says.
// Approving code the safety policy denies must be typed out in full; free
// text rejects with it as the reason, except at a stuck task, where it is
// guidance to go on with.
func GateAnswers(kind string) []Answer {
	reject := Answer{Words: []string{"n", "no"}, Signal: SignalReject, Means: "reject"}
	other := Answer{Signal: SignalReject, Means: "reject, with the text as the reason"}
	switch kind {
	case GatePolicy:
		return []Answer{
			{Words: []string{"yes"}, Signal: SignalApprove, Means: "run it anyway"},
			{Words: []string{"y"}, Means: `type "yes" in full to run code the policy denies`},
			reject, other,
		}
	case GateStuck:
		other = Answer{Signal: SignalFeedback, Means: "go on, with the text as guidance"}
	}
	return []Answer{{Words: []string{"y", "yes"}, Signal: SignalApprove, Means: "approve"}, reject, other}
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
	// Findings are the ways the attempt touched the user's tests.
	Findings []integrity.Finding `json:"findings,omitempty"`
	// Warnings are the safety policy's findings in the attempt's own code
	// that did not fail it (warn mode), for a person to review.
	Warnings []policy.Finding `json:"warnings,omitempty"`
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
	TestCmd       string                  `json:"testCmd,omitempty"`
	Protect       []string                `json:"protect,omitempty"` // globs added to the user's tests
	InputSnapshot string                  `json:"inputSnapshot,omitempty"`
	Setup         *SetupStatus            `json:"setup,omitempty"` // once the project's setup ran
	Pending       *Approval               `json:"pending,omitempty"`
	Feedback      []string                `json:"feedback,omitempty"` // guidance from people, in order
	Started       time.Time               `json:"started"`
	Runs          int                     `json:"runs"`              // workflow runs so far (continue-as-new)
	Lessons       []string                `json:"lessons,omitempty"` // ids of lessons recalled into prompts
	Error         string                  `json:"error,omitempty"`
	// The tool loop: the current attempt's model turns so far, what it is
	// doing now ("read app/models.py", "run pytest -x tests/test_api.py"),
	// the task's conversations in order, and the project instruction
	// files given to the model. MaxTurns is the attempt's turn budget,
	// after which its work is checked; the status query sets it (it is not
	// kept in state), 0 for one-answer attempts.
	Turn         int             `json:"turn,omitempty"`
	MaxTurns     int             `json:"maxTurns,omitempty"`
	Doing        string          `json:"doing,omitempty"`
	Transcripts  []TranscriptRef `json:"transcripts,omitempty"`
	Instructions []string        `json:"instructions,omitempty"`
	// Model is the model that answered the last turn, and FellBack why
	// the models before it in the chain did not, when they did not.
	Model    string `json:"model,omitempty"`
	FellBack string `json:"fellBack,omitempty"`
	// TestEditsAllowed: the task may change the user's tests.
	TestEditsAllowed bool `json:"testEditsAllowed,omitempty"`
	// TestEditsApproved is a person's word accepting an attempt that
	// changed the user's tests (GateIntegrity).
	TestEditsApproved string `json:"testEditsApproved,omitempty"`
}

// SetupStatus is how the project's setup went. Its snapshot, the input
// with the setup's changes, is where the task starts: plans, attempts and
// checks see it, and the task's changes are told against it.
type SetupStatus struct {
	Command  string `json:"command"`
	Snapshot string `json:"snapshot,omitempty"`
	Changed  int    `json:"changed"` // files created, changed or deleted
	Cached   bool   `json:"cached,omitempty"`
	Note     string `json:"note"` // "ran in 1.2s, 3 files changed", "cached, ..."
}

// TaskResult is the workflow's return value on success.
type TaskResult struct {
	SnapshotID   string `json:"snapshotId"`
	Iterations   int    `json:"iterations"`
	TestsByModel bool   `json:"testsByModel"`
	Status       Status `json:"status"`
}
