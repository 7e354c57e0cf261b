package activities

// Types of the tool loop's activities besides ModelTurn, RunTools and
// AppendMessages (agent.go, runtools.go, transcript.go). The workflow holds
// only ids, positions and these small summaries; the conversation itself
// lives in the store's transcripts.

// ToolSetAgent offers every tool of an attempt: the workspace tools, run
// and run_tests in the sandbox, and finish.
const ToolSetAgent = "agent"

// OpenStepInput opens the conversation of a plan step: it appends the
// system prompt and the first user message, which holds the task, the plan,
// the project's own instructions, recalled lessons, guidance, and the
// repository map (or, for a small project, its files whole).
type OpenStepInput struct {
	Transcript string   `json:"transcript"`
	Task       string   `json:"task"`
	Language   string   `json:"language"`
	TestCmd    string   `json:"testCmd,omitempty"`
	Plan       []string `json:"plan"`
	Step       int      `json:"step"`     // 1-based
	Snapshot   string   `json:"snapshot"` // the workspace the step starts from
	Lessons    string   `json:"lessons,omitempty"`
	Guidance   []string `json:"guidance,omitempty"`
	// Failure is the last failed check's output, when there is one: it
	// ranks the map's files and is shown to the model.
	Failure string `json:"failure,omitempty"`
	// Fenced is set for a model without tool calling: the first message
	// then asks for files in fenced blocks (see ApplyAnswer), not tools.
	Fenced bool `json:"fenced,omitempty"`
	// Budgets in tokens; zero means the defaults.
	MapTokens          int `json:"mapTokens,omitempty"`
	InstructionsTokens int `json:"instructionsTokens,omitempty"`
}

// OpenStepOutput is the transcript's length after the opening messages.
type OpenStepOutput struct {
	Length int `json:"length"`
	// Instructions are the project instruction files given to the model
	// (AGENTS.md and the like), for `status`.
	Instructions []string `json:"instructions,omitempty"`
	// Whole is set when the project was small enough to be shown whole.
	Whole bool `json:"whole,omitempty"`
}

// TurnSummary names a summary of a conversation's older turns, which a
// turn sends in their place when they no longer fit its context budget.
type TurnSummary struct {
	Key    string `json:"key"`    // the memo holding the summary's text
	Covers int    `json:"covers"` // it stands for messages [2, Covers): those after the opening system and user messages
}

// SummarizeInput asks for a summary of a transcript's messages before
// Position (a ModelTurnOutput's SummarizeTo), past its opening messages.
type SummarizeInput struct {
	Transcript string `json:"transcript"`
	Position   int    `json:"position"`
	Model      string `json:"model,omitempty"`
	// Previous is the summary in use, which the new one replaces.
	Previous *TurnSummary `json:"previous,omitempty"`
}

// SummarizeOutput is the summary and what it cost; a retry reuses it.
type SummarizeOutput struct {
	Summary TurnSummary `json:"summary"`
	Usage   Usage       `json:"usage"`
}

// SandboxCallInput runs one sandbox tool call (run or run_tests) of the
// model's last turn, on the workspace as the calls before it left it, and
// appends its result to the transcript at Position.
type SandboxCallInput struct {
	Transcript string `json:"transcript"`
	Position   int    `json:"position"`
	CallID     string `json:"callId"`
	Snapshot   string `json:"snapshot"`
	Language   string `json:"language"`
	// run_tests runs the task's tests as the judge does (see CheckInput).
	TestCmd        string   `json:"testCmd,omitempty"`
	InputSnapshot  string   `json:"inputSnapshot,omitempty"`
	Protect        []string `json:"protect,omitempty"`
	AllowTestEdits bool     `json:"allowTestEdits,omitempty"`
	// OutputBytes caps the result the model reads (head and tail); zero
	// is the default.
	OutputBytes int `json:"outputBytes,omitempty"`
}

// SandboxCallOutput is the workspace after the call and the transcript's
// new length.
type SandboxCallOutput struct {
	Snapshot string   `json:"snapshot"`
	Changed  []string `json:"changed,omitempty"`
	ExitCode int      `json:"exitCode"`
	TimedOut bool     `json:"timedOut,omitempty"`
	Length   int      `json:"length"`
	Headline string   `json:"headline"` // one line for status: "exit 1: 2 failed"
}
