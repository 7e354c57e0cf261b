package llm

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// exchange records what the provider's HTTP layer saw during one Complete
// call, so failures are classified from the real status code and headers
// instead of from the text of the client library's error messages.
type exchange struct {
	mu     sync.Mutex
	sent   bool
	status int
	header http.Header
	err    error
}

type exchangeKey struct{}

func withExchange(ctx context.Context, ex *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

func (ex *exchange) observe(resp *http.Response, err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	ex.sent = true
	ex.err = err
	if resp != nil {
		ex.status = resp.StatusCode
		ex.header = resp.Header.Clone()
	}
}

// outcome is a consistent copy of an exchange.
type outcome struct {
	sent   bool
	status int
	header http.Header
	err    error
}

func (ex *exchange) outcome() outcome {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return outcome{sent: ex.sent, status: ex.status, header: ex.header, err: ex.err}
}

// observingTransport reports every round trip to the exchange carried by
// the request's context and never replays a request: Temporal owns retries,
// so one activity attempt must be at most one provider call.
type observingTransport struct {
	next http.RoundTripper
}

func (t observingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	// Without GetBody net/http cannot resend the body on a fresh connection,
	// which switches off its transparent retry of non-idempotent requests.
	out.GetBody = nil
	resp, err := t.next.RoundTrip(out)
	if ex, ok := req.Context().Value(exchangeKey{}).(*exchange); ok {
		ex.observe(resp, err)
	}
	return resp, err
}

// newHTTPClient returns the client handed to every provider library. It has
// no overall timeout: the caller's context (an activity deadline) bounds a
// call, and a long streamed answer must not be cut at an arbitrary point.
func newHTTPClient() *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	// With replays off, a keep-alive connection the server already closed
	// fails the call; dropping idle connections before providers usually
	// do (60s and up) keeps that rare.
	base.IdleConnTimeout = 30 * time.Second
	return &http.Client{
		Transport: observingTransport{next: base},
		// Provider APIs do not redirect POSTs; following one would resend the prompt.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// maxRetryAfter bounds a provider's requested wait; beyond a day the value
// is noise, and bounding it keeps the arithmetic from overflowing.
const (
	maxRetryAfter     = 24 * time.Hour
	maxRetryAfterSecs = int(maxRetryAfter / time.Second)
)

// retryAfter reads how long a provider asked us to wait: Retry-After in
// seconds or as an HTTP date, or OpenAI's retry-after-ms. Zero means unknown.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After"); v != "" {
		if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
			return min(time.Duration(min(secs, maxRetryAfterSecs))*time.Second, maxRetryAfter)
		}
		if at, err := http.ParseTime(v); err == nil {
			return min(max(at.Sub(now), 0), maxRetryAfter)
		}
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.Atoi(v); err == nil && ms >= 0 {
			return min(time.Duration(min(ms, maxRetryAfterSecs*1000))*time.Millisecond, maxRetryAfter)
		}
	}
	return 0
}
