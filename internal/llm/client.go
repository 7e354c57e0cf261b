package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2"
	openaisdk "github.com/openai/openai-go/v3"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/ollama"
	"github.com/tmc/langchaingo/llms/openai"
)

const (
	openAIURL    = "https://api.openai.com/v1"
	anthropicURL = "https://api.anthropic.com/v1"
	geminiURL    = "https://generativelanguage.googleapis.com/v1beta"
	ollamaPort   = "11434"

	// anthropicMaxTokens replaces the library's default of 2048 output
	// tokens, too few for a whole source file; the API requires a value.
	anthropicMaxTokens = 8192

	// keylessToken is sent to OpenAI-compatible servers reached through a
	// base URL without a key: many local servers need none, but the
	// client library refuses to start without one.
	keylessToken = "unused"
)

// client is a Model over one langchaingo provider client.
type client struct {
	spec     Spec
	endpoint string
	// llm serves Complete; nil for providers whose client is ours alone
	// (Gemini), whose Complete is a turn without tools.
	llm llms.Model
	// hc and key serve the tool-calling clients, see Turn: oa for the
	// OpenAI protocol (OpenAI, Ollama), an for Anthropic's, both the
	// vendors' SDKs over hc; Gemini's is our own.
	hc  *http.Client
	key string
	oa  openaisdk.ChatCompletionService
	an  anthropicsdk.Client
	// legacyMaxTokens sends max_tokens rather than max_completion_tokens.
	legacyMaxTokens bool
	// noPromptCache marks no cache breakpoints (Env.NoPromptCache).
	noPromptCache bool
	// callOpts are provider-specific options added to every call.
	callOpts []llms.CallOption
	limits   Limits
	log      *slog.Logger
}

// New builds the Model a spec names, with credentials from env. The
// provider libraries never retry on their own (langchaingo v0.1.14 has no
// retry logic in its openai, anthropic or ollama clients, the vendors'
// SDKs are given no retries, and the HTTP client given to them all refuses
// to replay requests): Temporal owns retries.
func New(spec Spec, env Env) (Model, error) {
	if spec.Model == "" {
		spec.Model = DefaultModels[spec.Provider]
	}
	limits, err := env.Limits()
	if err != nil {
		return nil, fmt.Errorf("new model %s: %w", spec, err)
	}
	hc := newHTTPClient(limits)
	c := &client{spec: spec, hc: hc, limits: limits, noPromptCache: env.NoPromptCache, log: slog.Default().With("provider", string(spec.Provider), "model", spec.Model)}
	switch spec.Provider {
	case ProviderOpenAI:
		c.endpoint = cmp.Or(env.OpenAIBaseURL, openAIURL)
		token := env.OpenAIKey
		if token == "" {
			if env.OpenAIBaseURL == "" {
				return nil, fmt.Errorf("new model %s: %w: set %s, or %s for an OpenAI-compatible server", spec, ErrMissingKey, EnvOpenAIKey, EnvOpenAIBaseURL)
			}
			token = keylessToken
		}
		c.key = token
		if env.OpenAIBaseURL != "" {
			c.legacyMaxTokens = true
			// Compatible servers widely accept max_tokens but not always
			// the newer max_completion_tokens.
			c.callOpts = append(c.callOpts, llms.WithMetadata(map[string]any{"openai:use_legacy_max_tokens": true}))
		}
		c.oa = newOpenAIChat(hc, c.toolEndpoint(), c.key)
		c.llm, err = openai.New(openai.WithToken(token), openai.WithModel(spec.Model),
			openai.WithBaseURL(c.endpoint), openai.WithHTTPClient(hc))
	case ProviderAnthropic:
		if env.AnthropicKey == "" {
			return nil, fmt.Errorf("new model %s: %w: set %s", spec, ErrMissingKey, EnvAnthropicKey)
		}
		c.endpoint = cmp.Or(env.AnthropicBaseURL, anthropicURL)
		c.key = env.AnthropicKey
		c.an = newAnthropicClient(hc, c.key)
		c.llm, err = anthropic.New(anthropic.WithToken(env.AnthropicKey), anthropic.WithModel(spec.Model),
			anthropic.WithBaseURL(c.endpoint), anthropic.WithHTTPClient(hc))
	case ProviderGemini:
		if env.GeminiKey == "" {
			return nil, fmt.Errorf("new model %s: %w: set %s (or %s)", spec, ErrMissingKey, EnvGeminiKey, EnvGoogleKey)
		}
		c.endpoint = cmp.Or(env.GeminiBaseURL, geminiURL)
		c.key = env.GeminiKey
	case ProviderOllama:
		var u *url.URL
		if u, err = ollamaURL(env.OllamaHost); err != nil {
			return nil, fmt.Errorf("new model %s: %w", spec, err)
		}
		c.endpoint = u.String()
		c.oa = newOpenAIChat(hc, c.toolEndpoint(), c.key)
		c.llm, err = ollama.New(ollama.WithModel(spec.Model), ollama.WithServerURL(c.endpoint), ollama.WithHTTPClient(hc))
	default:
		return nil, fmt.Errorf("new model: %w %q: unknown provider", ErrBadSpec, spec.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("new model %s: %w", spec, err)
	}
	return c, nil
}

// ollamaURL accepts OLLAMA_HOST in the forms the ollama CLI does: host,
// host:port or a full URL; empty means the local default.
func ollamaURL(host string) (*url.URL, error) {
	host = strings.TrimSpace(host)
	if host == "" {
		host = "127.0.0.1"
	}
	// Like the ollama CLI: a bare host gets Ollama's port, a URL keeps its
	// scheme's standard port.
	raw := host
	bare := !strings.Contains(host, "://")
	if bare {
		raw = "http://" + host
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, fmt.Errorf("%w: %s=%q is not a host, host:port or http(s) URL", ErrBadSpec, EnvOllamaHost, host)
	}
	if bare && u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), ollamaPort)
	}
	return u, nil
}

// Complete sends one system and one human message. It streams when
// req.Stream or req.OnChunk is set; token usage comes from the provider's
// own report.
func (c *client) Complete(ctx context.Context, req Request) (Response, error) {
	if c.llm == nil {
		return c.completeByTurn(ctx, req)
	}
	msgs := make([]llms.MessageContent, 0, 2)
	if req.System != "" {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeSystem, req.System))
	}
	msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, req.Prompt))

	opts := append([]llms.CallOption{}, c.callOpts...)
	if maxTokens := c.maxTokens(req.MaxTokens); maxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(maxTokens))
	}
	stream := req.Stream || req.OnChunk != nil
	if stream {
		// For OpenAI the library asks for stream_options.include_usage
		// whenever it streams, so streamed calls report usage too.
		opts = append(opts, llms.WithStreamingFunc(capStream(c.limits.MaxAnswerBytes, req.OnChunk)))
	}

	start := time.Now()
	var resp *llms.ContentResponse
	status, err := c.observed(ctx, func(ctx context.Context) (err error) {
		resp, err = c.llm.GenerateContent(ctx, msgs, opts...)
		return err
	})
	if err != nil {
		return Response{}, err
	}
	out := response(resp)
	if int64(len(out.Text)) > c.limits.MaxAnswerBytes {
		return Response{}, c.limitFailure(outcome{}, answerTooLarge(c.limits.MaxAnswerBytes))
	}
	if out.Text == "" {
		return Response{}, c.emptyResponse(status)
	}
	c.logDone(stream, start, out.PromptTokens, out.CompletionTokens)
	out.Model = c.spec.String()
	return out, nil
}

// completeByTurn answers a completion as a turn offering no tools, for
// providers served by our own client alone.
func (c *client) completeByTurn(ctx context.Context, req Request) (Response, error) {
	var conv Conversation
	if req.System != "" {
		conv.Append(Message{Role: RoleSystem, Text: req.System})
	}
	conv.Append(Message{Role: RoleUser, Text: req.Prompt})
	opts := TurnOptions{MaxTokens: req.MaxTokens, Stream: req.Stream}
	// A streamed answer is capped as it arrives, as capStream caps the
	// other providers' completions: past the limit the call is cancelled
	// with the cap as its cause, before more is read.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if req.Stream || req.OnChunk != nil {
		capped := capStream(c.limits.MaxAnswerBytes, req.OnChunk)
		opts.OnText = func(text string) {
			if err := capped(ctx, []byte(text)); err != nil {
				cancel(err)
			}
		}
	}
	res, err := c.Turn(ctx, conv, nil, opts)
	var large *TooLargeError
	if errors.As(context.Cause(ctx), &large) {
		return Response{}, c.limitFailure(outcome{}, large)
	}
	if err != nil {
		return Response{}, err
	}
	if int64(len(res.Text)) > c.limits.MaxAnswerBytes {
		return Response{}, c.limitFailure(outcome{}, answerTooLarge(c.limits.MaxAnswerBytes))
	}
	return Response{Text: res.Text, PromptTokens: res.Usage.InputTokens, CompletionTokens: res.Usage.OutputTokens, Model: res.Model}, nil
}

// maxTokens is the output limit to ask for: Anthropic requires one.
func (c *client) maxTokens(asked int) int {
	if asked <= 0 && c.spec.Provider == ProviderAnthropic {
		return anthropicMaxTokens
	}
	return asked
}

// observed runs one provider call with its HTTP exchange recorded, and
// turns a failure into a classified *Error. It returns the HTTP status.
func (c *client) observed(ctx context.Context, call func(context.Context) error) (int, error) {
	ex := &exchange{}
	err := call(withExchange(ctx, ex))
	o := ex.outcome()
	if err != nil {
		e := c.classify(ctx, o, err, time.Now())
		c.log.Warn("model call failed", "kind", e.Kind, "status", e.Status, "retry_after", e.RetryAfter, "err", e.Err)
		return o.status, e
	}
	return o.status, nil
}

func (c *client) emptyResponse(status int) *Error {
	return &Error{Kind: KindTransient, Status: status,
		Err: fmt.Errorf("model provider %s, model %s: %w", c.spec.Provider, c.spec.Model, ErrEmptyResponse)}
}

func (c *client) logDone(stream bool, start time.Time, in, out int) {
	if in == 0 && out == 0 {
		c.log.Warn("model provider reported no token usage; cost is unknown")
	}
	c.log.Debug("model call done", "streamed", stream, "duration", time.Since(start),
		"prompt_tokens", in, "completion_tokens", out, "cost_usd", Cost(c.spec.Model, in, out))
}

// response joins the text of every choice (Anthropic returns one per
// content block) and reads usage under each provider's keys: OpenAI and
// Ollama use PromptTokens/CompletionTokens, Anthropic InputTokens/OutputTokens.
func response(r *llms.ContentResponse) Response {
	var out Response
	var text strings.Builder
	for _, ch := range r.Choices {
		if ch == nil {
			continue
		}
		text.WriteString(ch.Content)
		if out.PromptTokens == 0 && out.CompletionTokens == 0 {
			out.PromptTokens = firstInt(ch.GenerationInfo, "PromptTokens", "InputTokens")
			out.CompletionTokens = firstInt(ch.GenerationInfo, "CompletionTokens", "OutputTokens")
		}
	}
	out.Text = text.String()
	return out
}

func firstInt(info map[string]any, keys ...string) int {
	for _, k := range keys {
		if v, ok := info[k].(int); ok {
			return v
		}
	}
	return 0
}
