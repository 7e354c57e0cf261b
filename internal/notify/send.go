package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/truncate"
)

// DefaultTimeout bounds one delivery: connecting, sending and reading the
// answer's head. A webhook answers in well under a second; a dead one must
// not hold a worker's slot for long.
const DefaultTimeout = 10 * time.Second

// maxRetryAfter bounds the wait a 429's Retry-After asks for.
const maxRetryAfter = 5 * time.Minute

// NewClient is an HTTP client for webhooks: each request bounded by
// timeout, and no redirect followed (a webhook that redirects is
// misconfigured, and following it would send the message elsewhere).
func NewClient(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = timeout
	tr.TLSHandshakeTimeout = min(timeout, tr.TLSHandshakeTimeout)
	return &http.Client{
		Timeout:   timeout,
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// DeliveryError is a message a webhook did not take. Its text names the
// target by Redacted, never by its URL.
type DeliveryError struct {
	Target string // Target.Redacted
	Status int    // the HTTP status; 0 when there was no answer
	Detail string // the start of the answer, or why there was none
	// Permanent: sending it again would get the same answer (a 4xx other
	// than 429, or a redirect).
	Permanent bool
	// RetryAfter is how long the webhook asked to wait (429), 0 if it did not.
	RetryAfter time.Duration
}

func (e *DeliveryError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s did not answer: %s", e.Target, e.Detail)
	}
	msg := fmt.Sprintf("%s answered HTTP %d", e.Target, e.Status)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Permanent {
		msg += " (not retried: check its URL and format)"
	}
	return msg
}

// Post sends body to t. A 2xx is success; anything else is a
// *DeliveryError, Permanent for a 3xx or a 4xx other than 429.
func Post(ctx context.Context, c *http.Client, t Target, body []byte) error {
	fail := func(status int, detail string) *DeliveryError {
		return &DeliveryError{Target: t.Redacted(), Status: status, Detail: detail}
	}
	if err := CheckURL(t.URL); err != nil {
		e := fail(0, err.Error())
		e.Permanent = true
		return e
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return fail(0, "build request: "+withoutURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "autocoder")
	resp, err := c.Do(req)
	if err != nil {
		return fail(0, withoutURL(err))
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	e := fail(resp.StatusCode, oneLine(string(head)))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	case resp.StatusCode < 500:
		e.Permanent = true
	}
	return e
}

// withoutURL is an HTTP client error without the URL net/http puts in
// it: a webhook's URL is its credential.
func withoutURL(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	return err.Error()
}

func oneLine(s string) string {
	return truncate.Quote(strings.Join(strings.Fields(s), " "), 200)
}

// retryAfter reads a Retry-After of seconds, bounded; 0 if there is none.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return min(time.Duration(n)*time.Second, maxRetryAfter)
}
