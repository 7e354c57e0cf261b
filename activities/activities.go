// Package activities holds every step of a coding task that touches the
// world: the model, the sandbox and the store. Each is idempotent by input.
package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/workspace"
	"github.com/autocoder/autocoder/sandbox"
)

// Error types a workflow can tell apart.
const (
	ErrTypeModelAuth    = "ModelAuth"
	ErrTypeModelRequest = "ModelInvalidRequest"
	ErrTypeModelConfig  = "ModelConfig"
	ErrTypeBadInput     = "BadInput"
)

// ModelFactory builds the model named by a "provider:model" spec; an empty
// spec means the worker's default.
type ModelFactory func(spec string) (llm.Model, llm.Spec, error)

// Activities carries the dependencies every activity shares.
type Activities struct {
	Store   store.Store
	Sandbox sandbox.Runner
	Models  ModelFactory
	// Limits bound each sandbox run; zero means sandbox.DefaultLimits().
	Limits sandbox.Limits
	// SpacePaths are the directories that must have MinFreeSpace free
	// before a model call; nil means the store's and os.TempDir().
	SpacePaths []string
	// MinFreeSpace in bytes; zero means DefaultMinFreeSpace.
	MinFreeSpace int64
	// WorkerNotify are the worker's own webhooks, told of every task.
	WorkerNotify WorkerNotify
	// Webhooks delivers notifications; nil means a client bounded by
	// notify.DefaultTimeout.
	Webhooks *http.Client
	// Egress opens the proxy dependency installs (and the setup and the
	// install tool) reach the network through, a route per run. nil:
	// nothing is installed, the model is not offered install, and no run
	// has a network.
	Egress EgressRoutes
	// DepsDir keeps the installed dependencies, a directory per language
	// and manifests' hash; "" is one under os.TempDir(). The bwrap
	// backend's sandbox user must be able to reach it (no 0700 parent).
	DepsDir string
	// DepsMaxSize bounds the bytes of the installs kept in DepsDir: past
	// it a new install evicts those used least recently (but none used in
	// the last hour). 0 keeps every install.
	DepsMaxSize int64
	// SetupTimeout bounds a project's setup run (Setup); 0 is
	// DefaultSetupTimeout.
	SetupTimeout time.Duration
	// DepsIndexes are the registries' index URLs the user configured, by
	// language name (lang.Deps.IndexVar).
	DepsIndexes map[string]string
	// DepsHostEnv are the variables of each language's installs that the
	// ecosystem's configuration on the worker sets (lang.Deps.HostEnv),
	// by language name.
	DepsHostEnv map[string]map[string]string
	// VersionsTTL is how long the registries' answers on the newest
	// versions are kept in the store (versions.ttl); 0 asks every time.
	VersionsTTL time.Duration
	// Metrics counts model calls, tool calls and checks; nil counts
	// nothing.
	Metrics Metrics
	// MCP calls the tools of the user's MCP servers; nil offers none.
	MCP MCPTools
	// Prices override or add to the list prices of models (the
	// configuration's [prices]); nil: the list prices.
	Prices llm.PriceTable

	// Live replaces Models and Prices once the worker's configuration
	// changes them.
	Live Live

	snapshots snapshotCache // workspaces tool calls read
}

// Metrics is what the activities count. Each is counted where it is paid
// for or done once: a model answer or a check reused after a retry is not
// counted again.
type Metrics interface {
	// ModelCall is an answered model call, by "provider:model".
	ModelCall(model string, promptTokens, completionTokens int, costUSD float64)
	// ToolCall is a call the model made, by tool name.
	ToolCall(tool string)
	// Iteration is an attempt's check and whether it passed.
	Iteration(language string, passed bool)
}

type noMetrics struct{}

func (noMetrics) ModelCall(string, int, int, float64) {}
func (noMetrics) ToolCall(string)                     {}
func (noMetrics) Iteration(string, bool)              {}

func (a *Activities) metrics() Metrics {
	if a.Metrics == nil {
		return noMetrics{}
	}
	return a.Metrics
}

// countModelCall counts an answered call to spec and returns its usage.
func (a *Activities) countModelCall(spec llm.Spec, tokens llm.Usage) Usage {
	u := a.callUsage(spec, tokens)
	a.metrics().ModelCall(spec.String(), tokens.InputTokens, tokens.OutputTokens, u.CostUSD)
	return u
}

func (a *Activities) limits() sandbox.Limits {
	if a.Limits.Timeout == 0 {
		return sandbox.DefaultLimits()
	}
	return a.Limits
}

// complete calls the model once per distinct prompt within a workflow: the
// answer is memoized before it is used, so an activity retried after a
// crash reuses it instead of paying for it again.
func (a *Activities) complete(ctx context.Context, modelSpec, system, prompt string, iteration int) (llm.Response, Usage, error) {
	model, spec, err := a.model(modelSpec)
	if err != nil {
		return llm.Response{}, Usage{}, err
	}
	key := memoKey("llm", activity.GetInfo(ctx).WorkflowExecution.ID, spec.String(), system, prompt, fmt.Sprint(iteration))
	return a.completeOnce(ctx, key, model, spec, llm.Request{System: system, Prompt: prompt, Stream: true})
}

// model builds the named model; a spec it cannot build is permanent.
func (a *Activities) model(name string) (llm.Model, llm.Spec, error) {
	model, spec, err := a.models()(name)
	if err != nil {
		return nil, spec, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeModelConfig, err)
	}
	return model, spec, nil
}

// completeOnce makes the model call req once per memo key: the answer is
// memoized before it is used, and a key already answered is not asked
// again.
func (a *Activities) completeOnce(ctx context.Context, key string, model llm.Model, spec llm.Spec, req llm.Request) (llm.Response, Usage, error) {
	info := activity.GetInfo(ctx)
	var resp llm.Response
	if raw, err := a.Store.GetMemo(ctx, key); err == nil {
		if err := json.Unmarshal(raw, &resp); err == nil {
			activity.GetLogger(ctx).Info("model answer reused from memo", "activity", info.ActivityType.Name)
			return resp, a.callUsage(answered(spec, resp.Model), completionUsage(resp)), nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return llm.Response{}, Usage{}, fmt.Errorf("read memo: %w", err)
	}

	if err := a.checkSpace(ctx); err != nil {
		return llm.Response{}, Usage{}, err
	}
	// Heartbeats go out every second of the call, waiting for the first
	// token or streaming, so the heartbeat timeout (not the call's length)
	// bounds how long a dead worker's call goes unnoticed. Not one per
	// streamed chunk: the SDK sends the first heartbeat at once and waits
	// for the server, which a short call would pay for with nothing gained.
	// Their details say since when the model is awaited, for `status`.
	stop := heartbeatWhile(ctx, ModelCall{Since: time.Now()})
	resp, err := model.Complete(ctx, req)
	stop()
	if err != nil {
		return llm.Response{}, Usage{}, modelError(err)
	}
	raw, err := json.Marshal(resp)
	if err != nil {
		return llm.Response{}, Usage{}, fmt.Errorf("encode memo: %w", err)
	}
	// The answer is paid for: a store hiccup (a database restarting) is
	// waited out briefly, and in the end only costs the memo, which
	// matters solely if this activity is retried.
	if err := a.putMemo(ctx, key, raw); err != nil {
		activity.GetLogger(ctx).Warn("model answer not memoized", "error", err)
	}
	if resp.FellBack != "" {
		activity.GetLogger(ctx).Warn("model fell back", "answered", resp.Model, "fellBack", resp.FellBack)
	}
	return resp, a.countModelCall(answered(spec, resp.Model), completionUsage(resp)), nil
}

// answered is the model that answered: the one an answer names (a
// fallback chain's), else spec, which was asked.
func answered(spec llm.Spec, model string) llm.Spec {
	if model == "" {
		return spec
	}
	s, err := llm.ParseSpec(model)
	if err != nil {
		return spec
	}
	return s
}

// completionUsage is the usage of a completion, which reads no cache.
func completionUsage(resp llm.Response) llm.Usage {
	return llm.Usage{InputTokens: resp.PromptTokens, OutputTokens: resp.CompletionTokens}
}

// callUsage is the usage of one call to spec, at the worker's prices:
// fresh input, cache reads, cache writes and output each at its own.
func (a *Activities) callUsage(spec llm.Spec, t llm.Usage) Usage {
	m := ModelUsage{Model: spec.String(), PromptTokens: t.InputTokens, CompletionTokens: t.OutputTokens,
		CachedTokens: t.CacheReadTokens, CacheWriteTokens: t.CacheWriteTokens, Calls: 1, CostUSD: a.prices().Cost(spec, t)}
	if _, ok := a.prices().Of(spec); !ok {
		m.Unpriced = 1
	}
	return Usage{PromptTokens: m.PromptTokens, CompletionTokens: m.CompletionTokens, CachedTokens: m.CachedTokens,
		CacheWriteTokens: m.CacheWriteTokens, Calls: 1, CostUSD: m.CostUSD, Unpriced: m.Unpriced, PerModel: []ModelUsage{m}}
}

// modelError turns a provider failure into the error Temporal should see:
// a key or request the provider refuses is permanent; a rate limit is
// retried after the delay the provider asked for; the rest is retried.
func modelError(err error) error {
	var le *llm.Error
	if !errors.As(err, &le) {
		return fmt.Errorf("model call: %w", err)
	}
	switch le.Kind {
	case llm.KindAuth:
		return temporal.NewNonRetryableApplicationError(le.Error(), ErrTypeModelAuth, err)
	case llm.KindInvalidRequest:
		return temporal.NewNonRetryableApplicationError(le.Error(), ErrTypeModelRequest, err)
	case llm.KindRateLimited:
		return temporal.NewApplicationErrorWithOptions(le.Error(), "ModelRateLimited", temporal.ApplicationErrorOptions{
			Cause:          err,
			NextRetryDelay: max(le.RetryAfter, time.Second),
		})
	default:
		return fmt.Errorf("model call: %w", err)
	}
}

func memoKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// loadFiles reads a snapshot; an empty id is the empty workspace.
func (a *Activities) loadFiles(ctx context.Context, id string) ([]workspace.File, error) {
	if id == "" {
		return nil, nil
	}
	files, err := a.Store.GetSnapshot(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// Most likely the client that started the task wrote its
			// project to another store than this worker's.
			return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("snapshot %s is not in this worker's store: "+
				"the client that started the task must use the store the workers do (store.url, AUTOCODER_DATABASE_URL)", id), ErrTypeBadInput, err)
		}
		return nil, fmt.Errorf("load snapshot %s: %w", id, err)
	}
	return files, nil
}

// putMemo writes a memo, trying again three times over about 1.4 s.
func (a *Activities) putMemo(ctx context.Context, key string, raw []byte) error {
	wait := 200 * time.Millisecond
	for try := 1; ; try++ {
		err := a.Store.PutMemo(ctx, key, raw)
		if err == nil || try == 4 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// heartbeatEvery is how often long activities heartbeat; the workflow's
// heartbeat timeout is a few times longer.
const heartbeatEvery = time.Second

// ModelCall is the heartbeat detail of an activity waiting for the model.
type ModelCall struct {
	Since time.Time `json:"since"` // when the call was sent
}

// heartbeatWhile records heartbeats, with details, until the returned stop
// is called, so a long sandbox run or model call on a live worker is never
// mistaken for a dead one.
func heartbeatWhile(ctx context.Context, details ...any) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details...)
			}
		}
	}()
	return func() { close(done) }
}
