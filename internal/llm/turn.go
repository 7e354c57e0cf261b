package llm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// Turn sends the conversation and the tools on offer, and returns the
// model's answer: text, tool calls, or both.
//
// Tool turns do not go through langchaingo v0.1.14, whose clients lose
// tool calls (langchaingo_test.go): its OpenAI stream parser ignores a
// tool-call delta's index and passes the calls' JSON to the text callback,
// and its Anthropic client sends back only the first part of an assistant
// or tool message. The OpenAI protocol (which Ollama also serves) and
// Anthropic's go through the vendors' Go SDKs, for their request and answer
// types, HTTP layer and errors, with streamed answers read by our own
// reader (openai_tools.go, anthropic.go and sdk_test.go say why). Gemini's
// generateContent goes through a client of our own: langchaingo's would add
// Google's deprecated generative-ai-go SDK (gRPC and Cloud dependencies)
// for a protocol a page of code speaks, and gives calls no ids.
// All share the HTTP client, failure classification and logging of
// Complete.
func (c *client) Turn(ctx context.Context, conv Conversation, tools []Tool, opts TurnOptions) (TurnResult, error) {
	if err := c.checkTurn(conv, tools); err != nil {
		return TurnResult{}, &Error{Kind: KindInvalidRequest, Err: fmt.Errorf("model %s turn: %w", c.spec, err)}
	}
	stream := opts.Stream || opts.OnText != nil
	onText := opts.OnText
	if onText == nil {
		onText = func(string) {}
	}
	maxTokens := c.maxTokens(opts.MaxTokens)

	start := time.Now()
	var res TurnResult
	status, err := c.observed(ctx, func(ctx context.Context) (err error) {
		switch c.spec.Provider {
		case ProviderAnthropic:
			res, err = c.anthropicTurn(ctx, conv, tools, maxTokens, stream, onText)
		case ProviderGemini:
			res, err = c.geminiTurn(ctx, conv, tools, maxTokens, stream, onText)
		default:
			res, err = c.openAITurn(ctx, conv, tools, maxTokens, stream, onText)
		}
		return err
	})
	if err != nil {
		return TurnResult{}, err
	}
	if int64(len(res.Text)) > c.limits.MaxAnswerBytes {
		return TurnResult{}, c.limitFailure(outcome{}, answerTooLarge(c.limits.MaxAnswerBytes))
	}
	if res.Text == "" && len(res.ToolCalls) == 0 {
		return TurnResult{}, c.emptyResponse(status)
	}
	c.logDone(stream, start, res.Usage.InputTokens, res.Usage.OutputTokens)
	res.Model = c.spec.String()
	return res, nil
}

func (c *client) checkTurn(conv Conversation, tools []Tool) error {
	if len(tools) > 0 && !c.ToolCalling() {
		return fmt.Errorf("%w: use fenced blocks with this model", ErrNoToolCalling)
	}
	if err := validateTools(tools); err != nil {
		return err
	}
	if len(conv.Messages) == 0 {
		return fmt.Errorf("%w: no messages", ErrBadConversation)
	}
	return conv.Validate()
}

// toolless lists model families, by name prefix, known to have no native
// tool calling: OpenAI's completion-only and early reasoning models, and
// Ollama library models published without the "tools" capability, and
// the Gemma models the Gemini API serves without function calling.
var toolless = map[Provider][]string{
	ProviderOpenAI: {"o1-mini", "o1-preview", "gpt-3.5-turbo-instruct", "davinci", "babbage"},
	ProviderGemini: {"gemma"},
	ProviderOllama: {"codellama", "deepseek-coder", "starcoder", "codegemma", "gemma", "llama2", "phi3", "tinyllama"},
}

// ToolCalling reports whether the model takes native tool calls. When it
// does not, callers fall back to asking for fenced blocks.
func (c *client) ToolCalling() bool {
	for _, prefix := range toolless[c.spec.Provider] {
		if strings.HasPrefix(c.spec.Model, prefix) {
			return false
		}
	}
	return true
}

// normalStop maps the providers' stop reasons onto ours.
func normalStop(provider string) StopReason {
	switch provider {
	case "stop", "end_turn", "stop_sequence":
		return StopEnd
	case "tool_calls", "tool_use", "function_call":
		return StopToolUse
	case "length", "max_tokens":
		return StopMaxTokens
	}
	return StopOther
}

// maxEventBytes bounds one line of a server-sent event stream; a longer one
// is an error rather than memory without end.
const maxEventBytes = 8 << 20

// maxErrorBytes bounds how much of an error response is read for its message.
const maxErrorBytes = 64 << 10

// post sends body as JSON and returns the response when the provider
// answers 200. Any other status is an error carrying the provider's own
// message; the status itself reaches classify through the exchange.
func (c *client) post(ctx context.Context, url string, header http.Header, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("send request: %w", err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes)) // the status says enough if the body is cut
	return nil, refusal(raw, resp.Status)
}

// exchangeTurn posts a turn's request and reads the answer: a whole JSON
// answer of type W through whole, or an event stream through streamed.
func exchangeTurn[W any](ctx context.Context, c *client, url string, header http.Header, body any, stream bool,
	whole func(W) TurnResult, streamed func(io.Reader) (TurnResult, error)) (TurnResult, error) {
	resp, err := c.post(ctx, url, header, body)
	if err != nil {
		return TurnResult{}, err
	}
	defer resp.Body.Close()
	if stream {
		return streamed(resp.Body)
	}
	var w W
	if err := json.NewDecoder(resp.Body).Decode(&w); err != nil {
		return TurnResult{}, fmt.Errorf("decode response: %w", err)
	}
	return whole(w), nil
}

// refusalOf reads a vendor SDK's error for an answer other than 2xx as the
// provider's own refusal, from the body the SDK keeps on it, so it reads
// like the refusals of our own clients; any other error is returned as it is.
func refusalOf(err error) error {
	var resp *http.Response
	var oa *openai.Error
	var an *anthropic.Error
	switch {
	case errors.As(err, &oa):
		resp = oa.Response
	case errors.As(err, &an):
		resp = an.Response
	}
	if resp == nil || resp.Body == nil {
		return err
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes)) // the status says enough if the body is cut
	return refusal(raw, resp.Status)
}

// refusedError is a provider's answer other than 200: its message, and
// what the error details Google's APIs add say: the reasons
// (google.rpc.ErrorInfo) and the wait before a retry (google.rpc.RetryInfo).
type refusedError struct {
	msg        string
	reasons    []string
	retryDelay time.Duration
}

func (e *refusedError) Error() string { return e.msg }

// keyRefused reports whether the provider named the key as the problem,
// which Gemini does with HTTP 400 rather than 401.
func (e *refusedError) keyRefused() bool { return slices.Contains(e.reasons, "API_KEY_INVALID") }

// refusal reads error.message, where OpenAI, Anthropic and Gemini all put
// it, else the body, else the status line; and error.details[]: a
// reason, or a retryDelay such as "41s", which Gemini sends with a 429
// instead of a Retry-After header.
func refusal(raw []byte, status string) error {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Details []struct {
				Type       string `json:"@type"`
				Reason     string `json:"reason"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) != nil || e.Error.Message == "" {
		return &refusedError{msg: cmp.Or(strings.TrimSpace(string(raw)), status)}
	}
	out := &refusedError{msg: e.Error.Message}
	for _, d := range e.Error.Details {
		if d.Reason != "" {
			out.reasons = append(out.reasons, d.Reason)
		}
		if d.Type == "type.googleapis.com/google.rpc.RetryInfo" {
			if wait, err := time.ParseDuration(d.RetryDelay); err == nil && wait > 0 {
				out.retryDelay = min(wait, maxRetryAfter)
			}
		}
	}
	return out
}

// readEvents calls fn with the data of each server-sent event in r, until
// r ends or fn returns errStopEvents. Event names are not needed: both
// protocols repeat them, or need none, in the data.
func readEvents(r io.Reader, fn func(data []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxEventBytes)
	var data bytes.Buffer
	dispatch := func() error {
		if data.Len() == 0 {
			return nil
		}
		err := fn(bytes.TrimSuffix(data.Bytes(), []byte("\n")))
		data.Reset()
		return err
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := dispatch(); err != nil {
				return stopped(err)
			}
			continue
		}
		if value, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data.Write(bytes.TrimPrefix(value, []byte(" ")))
			data.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("read event stream: an event is longer than %d bytes", maxEventBytes)
		}
		return fmt.Errorf("read event stream: %w", err)
	}
	return stopped(dispatch())
}

// errStopEvents ends readEvents early without an error.
var errStopEvents = errors.New("stop reading events")

func stopped(err error) error {
	if errors.Is(err, errStopEvents) {
		return nil
	}
	return err
}
