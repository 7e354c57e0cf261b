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
	mu      sync.Mutex
	sent    bool
	status  int
	header  http.Header
	err     error
	bodyErr error // reading the answer failed: a limit or the network
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

func (ex *exchange) failBody(err error) {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if ex.bodyErr == nil {
		ex.bodyErr = err
	}
}

// outcome is a consistent copy of an exchange.
type outcome struct {
	sent    bool
	status  int
	header  http.Header
	err     error
	bodyErr error
}

func (ex *exchange) outcome() outcome {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return outcome{sent: ex.sent, status: ex.status, header: ex.header, err: ex.err, bodyErr: ex.bodyErr}
}

// observingTransport reports every round trip to the exchange carried by
// the request's context and never replays a request: Temporal owns retries,
// so one activity attempt must be at most one provider call. It holds each
// call to its limits: a silent provider is cut off, an answer too large
// fails as it arrives.
type observingTransport struct {
	next   http.RoundTripper
	limits Limits
}

func (t observingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	dog := startWatchdog(t.limits, cancel)
	out := req.Clone(ctx)
	// Without GetBody net/http cannot resend the body on a fresh connection,
	// which switches off its transparent retry of non-idempotent requests.
	out.GetBody = nil
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		if stall := dog.stall(); stall != nil {
			err = stall
		}
		dog.stop()
		cancel(nil)
	}
	ex, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if ex != nil {
		ex.observe(resp, err)
	}
	if err != nil {
		return nil, err
	}
	resp.Body = &guardedBody{body: resp.Body, dog: dog, cancel: cancel, ex: ex,
		left: bodyLimit(resp, t.limits.MaxAnswerBytes), limit: t.limits.MaxAnswerBytes}
	return resp, nil
}

// newHTTPClient returns the client handed to every provider library. It has
// no overall timeout: the caller's context (an activity deadline) bounds a
// call, and the transport cuts off a provider that stays silent (limits).
func newHTTPClient(limits Limits) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	// With replays off, a keep-alive connection the server already closed
	// fails the call; dropping idle connections before providers usually
	// do (60s and up) keeps that rare.
	base.IdleConnTimeout = 30 * time.Second
	return &http.Client{
		Transport: observingTransport{next: base, limits: limits},
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
