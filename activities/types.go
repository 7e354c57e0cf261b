package activities

import (
	"fmt"
	"slices"
	"time"

	"github.com/autocoder/autocoder/internal/integrity"
	"github.com/autocoder/autocoder/internal/policy"
)

// TestSummary is the outcome of one validation or test run, trimmed to fit
// in workflow state.
type TestSummary struct {
	Passed       bool          `json:"passed"`
	ExitCode     int           `json:"exitCode"`
	TimedOut     bool          `json:"timedOut,omitempty"`
	OOMKilled    bool          `json:"oomKilled,omitempty"`
	FailingTests []string      `json:"failingTests,omitempty"`
	Output       string        `json:"output,omitempty"` // tail of the combined output
	Duration     time.Duration `json:"duration"`
	// Stage says which gate produced this: "generate" (unusable model
	// output), "validate" (syntax or policy), "install" (the project's
	// dependencies) or "test".
	Stage string `json:"stage"`
	// PolicyOnly is set on a failed validation whose findings are all
	// safety-policy findings (no syntax errors): a person may approve them.
	PolicyOnly bool `json:"policyOnly,omitempty"`
	// Warnings are safety-policy findings that did not fail the check (warn
	// mode): for a person to review.
	Warnings []policy.Finding `json:"warnings,omitempty"`
	// Policy is set on a failed validation with any safety-policy finding,
	// syntax errors or not.
	Policy bool `json:"policy,omitempty"`
	// Findings are the ways the attempt touched the user's tests. An
	// attempt with any has not passed, whatever its tests did.
	Findings []integrity.Finding `json:"findings,omitempty"`
	// TestsPassed is set when the tests passed, the user's as they were at
	// the start: with Findings, only the tampering failed the attempt.
	TestsPassed bool `json:"testsPassed,omitempty"`
	// Restored is the attempt's snapshot with the user's tests put back as
	// they were and tampering configuration taken out, when Findings name
	// files: the next attempt starts from it.
	Restored string `json:"restored,omitempty"`
	// Lessons are those of failures like this one, when the check failed
	// and CheckInput.RecallLessons asked for them: for the retry's prompt,
	// not for the task's record.
	Lessons *RecallOutput `json:"lessons,omitempty"`
	// Deps says how the project's dependencies were had, when it declares
	// any: from the cache, or installed (how long it took, what the egress
	// proxy refused).
	Deps string `json:"deps,omitempty"`

	// ran is what the test runner reported about each test, when its
	// output was whole (for the judge, inside an activity).
	ran *integrity.Ran
}

// Headline is a one-line description of the outcome.
func (s TestSummary) Headline() string {
	switch {
	case len(s.Findings) > 0:
		return "integrity: " + s.Findings[0].String() + more(len(s.Findings)-1)
	case s.Passed && len(s.Warnings) > 0:
		return fmt.Sprintf("tests passed, %d safety warning(s) to review", len(s.Warnings))
	case s.Passed:
		return "tests passed"
	case s.Stage == "generate":
		return "model output rejected"
	case s.Stage == "validate":
		return "validation failed"
	case s.Stage == "install":
		return "dependency install failed"
	case s.TimedOut:
		return "tests timed out"
	case s.OOMKilled:
		return "tests ran out of memory"
	case len(s.FailingTests) > 0:
		return "tests failed: " + joinLimited(s.FailingTests, 3)
	default:
		return "tests failed"
	}
}

// Usage counts model tokens and their price. PromptTokens counts every
// input token; of them, CachedTokens were read from the provider's prompt
// cache and CacheWriteTokens written to it, each priced on its own (see
// llm.Price). Both are zero in the histories of older workers.
type Usage struct {
	PromptTokens     int     `json:"promptTokens"`
	CompletionTokens int     `json:"completionTokens"`
	CachedTokens     int     `json:"cachedTokens,omitempty"`
	CacheWriteTokens int     `json:"cacheWriteTokens,omitempty"`
	CostUSD          float64 `json:"costUsd"`
	Calls            int     `json:"calls"`
	// Unpriced counts the calls to models without a known price, whose
	// cost CostUSD leaves out: with any, the cost is unknown.
	Unpriced int `json:"unpricedCalls,omitempty"`
	// PerModel splits the figures by the model that answered, in the
	// order the models first answered.
	PerModel []ModelUsage `json:"perModel,omitempty"`
}

// ModelUsage is the usage of one model, "provider:model".
type ModelUsage struct {
	Model            string  `json:"model"`
	PromptTokens     int     `json:"promptTokens"`
	CompletionTokens int     `json:"completionTokens"`
	CachedTokens     int     `json:"cachedTokens,omitempty"`
	CacheWriteTokens int     `json:"cacheWriteTokens,omitempty"`
	CostUSD          float64 `json:"costUsd"`
	Calls            int     `json:"calls"`
	Unpriced         int     `json:"unpricedCalls,omitempty"`
}

func (m *ModelUsage) add(o ModelUsage) {
	m.PromptTokens += o.PromptTokens
	m.CompletionTokens += o.CompletionTokens
	m.CachedTokens += o.CachedTokens
	m.CacheWriteTokens += o.CacheWriteTokens
	m.CostUSD += o.CostUSD
	m.Calls += o.Calls
	m.Unpriced += o.Unpriced
}

// Sum is u's totals without the split by model, comparable with ==; its
// Totals are u again, but for PerModel.
func (u Usage) Sum() ModelUsage {
	return ModelUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, Calls: u.Calls, Unpriced: u.Unpriced}
}

// Totals is the model's usage as a task's, without the split by model.
func (m ModelUsage) Totals() Usage {
	return Usage{PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, CachedTokens: m.CachedTokens,
		CacheWriteTokens: m.CacheWriteTokens, CostUSD: m.CostUSD, Calls: m.Calls, Unpriced: m.Unpriced}
}

// Tokens says the tokens of the calls: input, split once any was cached
// into fresh, read from the provider's prompt cache, and written to it
// (each priced on its own), and output.
func (u Usage) Tokens() string {
	if u.CachedTokens == 0 && u.CacheWriteTokens == 0 {
		return fmt.Sprintf("%d in, %d out", u.PromptTokens, u.CompletionTokens)
	}
	s := fmt.Sprintf("%d in (%d fresh, %d cached", u.PromptTokens, u.PromptTokens-u.CachedTokens-u.CacheWriteTokens, u.CachedTokens)
	if u.CacheWriteTokens > 0 {
		s += fmt.Sprintf(", %d written to the cache", u.CacheWriteTokens)
	}
	return s + fmt.Sprintf("), %d out", u.CompletionTokens)
}

// Cost says what the calls cost, or "unknown" when a model without a
// known price made some of them (a price of $0 would mislead).
func (u Usage) Cost() string {
	switch {
	case u.Unpriced == 0:
		return fmt.Sprintf("$%.4f", u.CostUSD)
	case u.CostUSD == 0:
		return "unknown"
	}
	return fmt.Sprintf("$%.4f and unknown", u.CostUSD)
}

// Add accumulates another call's usage.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.CachedTokens += o.CachedTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.CostUSD += o.CostUSD
	u.Calls += o.Calls
	u.Unpriced += o.Unpriced
	for _, m := range o.PerModel {
		i := slices.IndexFunc(u.PerModel, func(x ModelUsage) bool { return x.Model == m.Model })
		if i < 0 {
			u.PerModel = append(u.PerModel, ModelUsage{Model: m.Model})
			i = len(u.PerModel) - 1
		}
		u.PerModel[i].add(m)
	}
}

func more(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d more)", n)
}

func joinLimited(items []string, n int) string {
	out := ""
	for i, s := range items {
		if i == n {
			return out + ", …"
		}
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// PlanInput asks for a plan.
type PlanInput struct {
	Task          string `json:"task"`
	Language      string `json:"language"`
	TestCmd       string `json:"testCmd,omitempty"`
	InputSnapshot string `json:"inputSnapshot,omitempty"`
	Model         string `json:"model,omitempty"`
	// Guidance is what people said, e.g. why they rejected a plan.
	Guidance []string `json:"guidance,omitempty"`
	// Lessons is recalled experience from earlier tasks.
	Lessons string `json:"lessons,omitempty"`
	// RecallLessons asks Plan to recall the task's lessons itself, use them
	// and return them (in place of Lessons).
	RecallLessons bool `json:"recallLessons,omitempty"`
}

// PlanOutput is the plan as numbered steps.
type PlanOutput struct {
	Steps []string `json:"steps"`
	Usage Usage    `json:"usage"`
	// Lessons are the lessons recalled for the task, when asked for.
	Lessons *RecallOutput `json:"lessons,omitempty"`
	// Instructions are the project instruction files the plan was made
	// with (AGENTS.md and the like), for `status`.
	Instructions []string `json:"instructions,omitempty"`
}

// GenerateInput asks for the code of one plan step.
type GenerateInput struct {
	Task         string   `json:"task"`
	Language     string   `json:"language"`
	TestCmd      string   `json:"testCmd,omitempty"`
	Plan         []string `json:"plan"`
	Step         int      `json:"step"` // 1-based
	Iteration    int      `json:"iteration"`
	BaseSnapshot string   `json:"baseSnapshot,omitempty"`
	// Feedback is the reflection on the previous failed attempt, if any.
	Feedback string `json:"feedback,omitempty"`
	// Guidance is what people said through the feedback signal.
	Guidance []string `json:"guidance,omitempty"`
	// Lessons is recalled experience from earlier tasks.
	Lessons string `json:"lessons,omitempty"`
	Model   string `json:"model,omitempty"`
	// Failure is the previous attempt's failed check, made on BaseSnapshot.
	// When set, Generate first reflects on it (in place of Feedback).
	Failure *TestSummary `json:"failure,omitempty"`
	// RecallLessons asks, with Failure, for the lessons of failures like
	// it too; they are added to Lessons and returned.
	RecallLessons bool `json:"recallLessons,omitempty"`
}

// GenerateOutput names the snapshot the model's files produced. When the
// model's output could not be used, Rejected says why (for reflection) and
// SnapshotID is the unchanged base.
type GenerateOutput struct {
	SnapshotID string   `json:"snapshotId"`
	Changed    []string `json:"changed,omitempty"`
	Rejected   string   `json:"rejected,omitempty"`
	Usage      Usage    `json:"usage"` // of both calls when it reflected
	// Reflection and Lessons answer Failure and RecallLessons.
	Reflection string        `json:"reflection,omitempty"`
	Lessons    *RecallOutput `json:"lessons,omitempty"`
}

// CheckInput names a snapshot to validate or test.
type CheckInput struct {
	SnapshotID string `json:"snapshotId"`
	Language   string `json:"language"`
	TestCmd    string `json:"testCmd,omitempty"`
	// Allow lists safety-policy categories allowed outright; IgnorePolicy
	// skips the policy and checks syntax only; Warn makes the policy's
	// findings warnings (TestSummary.Warnings) that do not fail the check.
	Allow        []string `json:"allow,omitempty"`
	IgnorePolicy bool     `json:"ignorePolicy,omitempty"`
	Warn         bool     `json:"warn,omitempty"`
	// InputSnapshot is the task's starting workspace: its tests are the
	// user's, and checks run them as they were (see loadJudged). Protect
	// adds globs to them; AllowTestEdits lets the attempt's version run.
	InputSnapshot  string   `json:"inputSnapshot,omitempty"`
	Protect        []string `json:"protect,omitempty"`
	AllowTestEdits bool     `json:"allowTestEdits,omitempty"`
	// Scope is what judges the step: ScopeAll (the default) runs the
	// task's whole test command; ScopeStep, for every plan step but the
	// last, runs the language's compile check and the tests the step
	// named when it finished (Tests).
	Scope string   `json:"scope,omitempty"`
	Tests []string `json:"tests,omitempty"`
	// RecallLessons asks a failed check for the lessons of failures like
	// it too, so the retry hears of them with no round trip of its own.
	RecallLessons bool `json:"recallLessons,omitempty"`
}

// Check scopes.
const (
	ScopeAll  = ""
	ScopeStep = "step"
)

// ReflectInput describes a failed attempt, for Generate's reflection.
type ReflectInput struct {
	Task       string      `json:"task"`
	Language   string      `json:"language"`
	Plan       []string    `json:"plan"`
	Step       int         `json:"step"`
	Iteration  int         `json:"iteration"`
	SnapshotID string      `json:"snapshotId"`
	Failure    TestSummary `json:"failure"`
	Model      string      `json:"model,omitempty"`
	// RecallLessons asks for the lessons of failures like this one too.
	RecallLessons bool `json:"recallLessons,omitempty"`
}

// ReflectOutput is the model's diagnosis and fix plan.
type ReflectOutput struct {
	Reflection string `json:"reflection"`
	Usage      Usage  `json:"usage"`
	// Lessons are set when RecallLessons was asked for; empty when the
	// store could not answer (memory is an aid, not a reason to fail).
	Lessons *RecallOutput `json:"lessons,omitempty"`
}
