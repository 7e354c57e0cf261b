package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/internal/bytesize"
)

// Environment variables that bound one model call (read by internal/config).
const (
	EnvFirstByteTimeout = "AUTOCODER_MODEL_FIRST_BYTE_TIMEOUT"
	EnvIdleTimeout      = "AUTOCODER_MODEL_IDLE_TIMEOUT"
	EnvMaxAnswer        = "AUTOCODER_MODEL_MAX_ANSWER"
)

// MaxToolArgumentBytes caps the arguments of one tool call, as
// MaxAnswerBytes caps an answer's text: ScreenCalls refuses a call over
// it. 256 KiB is about 64,000 tokens, more than the output budget of a
// model's turn, and a quarter of the largest file a workspace takes.
const MaxToolArgumentBytes = 256 << 10

// Limits bound one model call while it runs, well inside the activity's
// own timeout, so a hanging or flooding provider costs minutes and
// megabytes, not the whole activity timeout and the worker's memory.
type Limits struct {
	// FirstByte is how long the provider may take to start its answer
	// (headers and the first byte of the body). An answer that is not
	// streamed arrives at once, so it must be written within this time.
	FirstByte time.Duration
	// Idle is the longest silence allowed once the answer has begun.
	Idle time.Duration
	// MaxAnswerBytes caps the answer's text, enforced while it is read.
	MaxAnswerBytes int64
}

// DefaultLimits leave a slow local model time to read a long prompt and
// a real answer (at most a few hundred KiB of code) plenty of room.
var DefaultLimits = Limits{FirstByte: 2 * time.Minute, Idle: time.Minute, MaxAnswerBytes: 4 << 20}

// Limits reads the call limits of e; unset ones take DefaultLimits.
func (e Env) Limits() (Limits, error) {
	l := DefaultLimits
	var errs []error
	duration := func(name, v string, into *time.Duration) {
		if strings.TrimSpace(v) == "" {
			return
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%w: %s=%q must be a positive duration such as 90s or 2m", ErrBadSpec, name, v))
			return
		}
		*into = d
	}
	duration(EnvFirstByteTimeout, e.FirstByteTimeout, &l.FirstByte)
	duration(EnvIdleTimeout, e.IdleTimeout, &l.Idle)
	if strings.TrimSpace(e.MaxAnswer) != "" {
		n, err := bytesize.Parse(e.MaxAnswer)
		if err != nil || n == 0 {
			errs = append(errs, fmt.Errorf("%w: %s=%q must be a size such as 4MiB", ErrBadSpec, EnvMaxAnswer, e.MaxAnswer))
		} else {
			l.MaxAnswerBytes = n
		}
	}
	return l, errors.Join(errs...)
}

// StallError is a provider that went silent for longer than a limit allows.
type StallError struct {
	Waited  time.Duration
	Started bool // the answer had begun: the idle limit, not the first-byte one
}

func (e *StallError) Error() string {
	if e.Started {
		return fmt.Sprintf("stopped sending for %s in the middle of its answer (limit: %s)", e.Waited, EnvIdleTimeout)
	}
	return fmt.Sprintf("sent nothing for %s (limit: %s)", e.Waited, EnvFirstByteTimeout)
}

// TooLargeError is an answer cut off at the size limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("sent an answer of more than %s and was cut off (limit: %s): ask for a smaller change, or raise the limit",
		bytesize.Format(e.Limit), EnvMaxAnswer)
}

func answerTooLarge(limit int64) error { return &TooLargeError{Limit: limit} }

// bodyLimit bounds the bytes read from a response. Streams frame every
// few bytes of text in an event of their own, so their bound is loose;
// the text is capped as it is assembled (capStream). Any other body is
// decoded whole, so its bound is the answer's plus room for JSON.
func bodyLimit(resp *http.Response, maxAnswer int64) int64 {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" || ct == "application/x-ndjson" {
		return 64 * maxAnswer
	}
	return 2*maxAnswer + 64<<10
}

// capStream is the streaming callback of a call: it hands chunks to
// onChunk and stops the stream once its text passes limit bytes, before
// the client library has gathered more.
func capStream(limit int64, onChunk func(string)) func(context.Context, []byte) error {
	var n int64
	return func(_ context.Context, chunk []byte) error {
		if n += int64(len(chunk)); n > limit {
			return answerTooLarge(limit)
		}
		if len(chunk) > 0 && onChunk != nil {
			onChunk(string(chunk))
		}
		return nil
	}
}

// answerText gathers a streamed turn's text, handing each piece to onText,
// and fails the stream with a TooLargeError once the text would pass limit
// bytes, before more is read.
type answerText struct {
	b      strings.Builder
	limit  int64
	onText func(string)
}

func (t *answerText) add(s string) error {
	if s == "" {
		return nil
	}
	if int64(t.b.Len()+len(s)) > t.limit {
		return answerTooLarge(t.limit)
	}
	t.b.WriteString(s)
	t.onText(s)
	return nil
}

// limitFailure classifies a call stopped by one of the limits, whichever
// layer reported it; nil when no limit was hit.
func (c *client) limitFailure(o outcome, err error) *Error {
	who := "model provider " + string(c.spec.Provider)
	for _, e := range []error{o.bodyErr, o.err, err} {
		var stall *StallError
		var large *TooLargeError
		switch {
		case errors.As(e, &stall):
			return &Error{Kind: KindTransient, Status: o.status, Err: fmt.Errorf("%s %w", who, stall)}
		case errors.As(e, &large):
			// Asking again would pay for another flood.
			return &Error{Kind: KindInvalidRequest, Status: o.status, Err: fmt.Errorf("%s %w", who, large)}
		}
	}
	return nil
}

// watchdog cancels a request whose provider stays silent too long: first
// for FirstByte, then, once the body has begun, for Idle between reads.
type watchdog struct {
	limits Limits
	cancel context.CancelCauseFunc
	mu     sync.Mutex
	timer  *time.Timer
	// deadline is when silence becomes a stall. A timer that fired just
	// before progress reset it finds a later deadline and re-arms.
	deadline time.Time
	begun    bool
	fired    *StallError
}

func startWatchdog(l Limits, cancel context.CancelCauseFunc) *watchdog {
	w := &watchdog{limits: l, cancel: cancel}
	w.mu.Lock() // the timer may fire before it is stored
	defer w.mu.Unlock()
	w.deadline = time.Now().Add(l.FirstByte)
	w.timer = time.AfterFunc(l.FirstByte, w.fire)
	return w
}

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired != nil || w.timer == nil {
		return
	}
	if left := time.Until(w.deadline); left > 0 {
		w.timer.Reset(left)
		return
	}
	wait := w.limits.FirstByte
	if w.begun {
		wait = w.limits.Idle
	}
	w.fired = &StallError{Waited: wait, Started: w.begun}
	w.cancel(w.fired)
}

// progress notes bytes received: the idle limit starts over.
func (w *watchdog) progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired == nil && w.timer != nil {
		w.begun = true
		w.deadline = time.Now().Add(w.limits.Idle)
		w.timer.Reset(w.limits.Idle)
	}
}

// stall returns the stall that stopped the request, or nil.
func (w *watchdog) stall() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired == nil {
		return nil
	}
	return w.fired
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// guardedBody is a response body read under the watchdog and cut at a
// size limit: a flood fails as it arrives, never buffered whole.
type guardedBody struct {
	body   io.ReadCloser
	dog    *watchdog
	cancel context.CancelCauseFunc
	ex     *exchange
	left   int64 // bytes still allowed
	limit  int64 // the answer limit, for the message
}

func (b *guardedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// At the limit: only the end of the body may follow.
		var one [1]byte
		if n, err := b.body.Read(one[:]); n == 0 && err == io.EOF {
			return 0, io.EOF
		}
		return 0, b.fail(answerTooLarge(b.limit))
	}
	n, err := b.body.Read(p[:min(int64(len(p)), b.left)])
	b.left -= int64(n)
	if n > 0 {
		b.dog.progress()
	}
	if err != nil && err != io.EOF {
		err = b.fail(cmp.Or(b.dog.stall(), err))
	}
	return n, err
}

// fail records a failure the client library may word its own way.
func (b *guardedBody) fail(err error) error {
	if b.ex != nil {
		b.ex.failBody(err)
	}
	return err
}

func (b *guardedBody) Close() error {
	b.dog.stop()
	err := b.body.Close()
	b.cancel(nil)
	return err
}
