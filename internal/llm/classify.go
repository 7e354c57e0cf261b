package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrEmptyResponse reports an answer with no text at all. It is transient:
// a provider that cut a stream short usually answers on the next attempt.
var ErrEmptyResponse = errors.New("model returned an empty response")

// classify turns a failed call into an *Error from what the HTTP layer saw.
// The messages are written for the person running autocoder: they say what
// went wrong and which setting to change.
func (c *client) classify(ctx context.Context, o outcome, err error, now time.Time) *Error {
	if e := c.limitFailure(o, err); e != nil && ctx.Err() == nil {
		return e
	}
	who := "model provider " + string(c.spec.Provider)
	e := &Error{Kind: KindTransient, Status: o.status}
	var withheld *RefusedContentError
	switch st := o.status; {
	case ctx.Err() != nil:
		e.Err = fmt.Errorf("call to %s was interrupted: %w: %w", who, ctx.Err(), err)
	case errors.As(err, &withheld):
		e.Kind = KindInvalidRequest
		e.Err = fmt.Errorf("%s %w", who, err)
	case st == http.StatusUnauthorized:
		e.Kind = KindAuth
		e.Err = fmt.Errorf("%s rejected the API key (HTTP 401): %s: %w", who, c.keyHint(), err)
	case st == http.StatusBadRequest && keyRefused(err):
		e.Kind = KindAuth
		e.Err = fmt.Errorf("%s rejected the API key (HTTP 400): %s: %w", who, c.keyHint(), err)
	case st == http.StatusForbidden:
		e.Kind = KindAuth
		e.Err = fmt.Errorf("%s refused access to model %q (HTTP 403): %s: %w", who, c.spec.Model, c.keyHint(), err)
	case st == http.StatusNotFound:
		e.Kind = KindInvalidRequest
		e.Err = fmt.Errorf("%s does not serve model %q (HTTP 404): %s: %w", who, c.spec.Model, c.modelHint(), err)
	case st == http.StatusTooManyRequests:
		e.Kind = KindRateLimited
		e.RetryAfter = cmp.Or(retryAfter(o.header, now), retryDelay(err))
		wait := "it did not say when to retry"
		if e.RetryAfter > 0 {
			wait = "retry after " + e.RetryAfter.String()
		}
		e.Err = fmt.Errorf("%s is rate limiting requests (HTTP 429), %s: %w", who, wait, err)
	case st == http.StatusRequestTimeout:
		e.Err = fmt.Errorf("%s timed out reading the request (HTTP 408): %w", who, err)
	case st >= 400 && st < 500:
		e.Kind = KindInvalidRequest
		e.Err = fmt.Errorf("%s rejected the request (HTTP %d): %w", who, st, err)
	case st >= 500:
		e.Err = fmt.Errorf("%s failed (HTTP %d), try again later: %w", who, st, err)
	case o.err != nil:
		// The transport's own error keeps its type (net.Error, DNS, TLS),
		// which the client library's message flattens.
		e.Err = fmt.Errorf("cannot reach %s at %s: %w", who, c.endpoint, o.err)
	case !o.sent:
		e.Kind = KindInvalidRequest
		e.Err = fmt.Errorf("cannot build a request for %s: %w", who, err)
	default:
		e.Err = fmt.Errorf("%s sent an unusable response (HTTP %d): %w", who, st, err)
	}
	return e
}

// retryDelay is the wait a refusal's body names (Gemini's RetryInfo), or 0.
func retryDelay(err error) time.Duration {
	var r *refusedError
	if errors.As(err, &r) {
		return r.retryDelay
	}
	return 0
}

// keyRefused reports whether a refusal names the key as its reason.
func keyRefused(err error) bool {
	var r *refusedError
	return errors.As(err, &r) && r.keyRefused()
}

func (c *client) keyHint() string {
	switch c.spec.Provider {
	case ProviderOpenAI:
		return "set " + EnvOpenAIKey + " to a valid key"
	case ProviderAnthropic:
		return "set " + EnvAnthropicKey + " to a valid key"
	case ProviderGemini:
		return "set " + EnvGeminiKey + " to a valid key"
	}
	return "check the server at " + EnvOllamaHost
}

func (c *client) modelHint() string {
	switch {
	case c.spec.Provider == ProviderOllama:
		return "pull it with `ollama pull " + c.spec.Model + "` or pick another with --model"
	case c.spec.Provider == ProviderOpenAI && c.endpoint != openAIURL:
		return "check --model, and " + EnvOpenAIBaseURL + " (" + c.endpoint + ", usually ending in /v1)"
	}
	return "pick another with --model provider:model"
}

// String names the kind in logs.
func (k ErrorKind) String() string {
	switch k {
	case KindTransient:
		return "transient"
	case KindRateLimited:
		return "rate_limited"
	case KindAuth:
		return "auth"
	case KindInvalidRequest:
		return "invalid_request"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}
