package llm

import (
	"errors"
	"sync"
	"time"
)

// DefaultBreakerCooldown is how long a model that failed is passed over
// while another in its chain can answer.
const DefaultBreakerCooldown = 2 * time.Minute

// Breakers hold a circuit breaker per model (provider and model name) for
// one worker process. A model whose call failed with an outage (a 5xx, a
// timeout, a rate limit) is open: Allow refuses it for Cooldown, so the
// next model of a chain answers at once instead of after another failure.
// After the cooldown it is half-open: one call may try it; its success
// closes the breaker, its failure opens it for another cooldown.
type Breakers struct {
	// Cooldown is how long an open breaker refuses calls; zero is
	// DefaultBreakerCooldown.
	Cooldown time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu    sync.Mutex
	state map[Spec]*breaker
}

type breaker struct {
	openUntil time.Time // zero: closed
	trial     bool      // half-open, and a call is trying it
}

// BreakerState is what a breaker says of a model.
type BreakerState int

const (
	BreakerClosed   BreakerState = iota // calls go through
	BreakerOpen                         // failed recently: passed over
	BreakerHalfOpen                     // cooled down: one call may try it
)

func (b *Breakers) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}

func (b *Breakers) cooldown() time.Duration {
	if b.Cooldown <= 0 {
		return DefaultBreakerCooldown
	}
	return b.Cooldown
}

// State is the breaker's state for spec.
func (b *Breakers) State(spec Spec) BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stateLocked(spec)
}

func (b *Breakers) stateLocked(spec Spec) BreakerState {
	br := b.state[spec]
	switch {
	case br == nil || br.openUntil.IsZero():
		return BreakerClosed
	case b.now().Before(br.openUntil):
		return BreakerOpen
	}
	return BreakerHalfOpen
}

// Allow reports whether a call to spec may go out now: always when the
// breaker is closed, never while it is open, and for one call at a time
// once it is half-open. A nil *Breakers allows everything.
func (b *Breakers) Allow(spec Spec) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.stateLocked(spec) {
	case BreakerOpen:
		return false
	case BreakerHalfOpen:
		br := b.state[spec]
		if br.trial {
			return false
		}
		br.trial = true
	}
	return true
}

// Retry is when spec's breaker lets a call try it again; zero when closed.
func (b *Breakers) Retry(spec Spec) time.Time {
	if b == nil {
		return time.Time{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if br := b.state[spec]; br != nil {
		return br.openUntil
	}
	return time.Time{}
}

// Success closes spec's breaker.
func (b *Breakers) Success(spec Spec) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.state, spec)
}

// Failure opens spec's breaker for the cooldown.
func (b *Breakers) Failure(spec Spec) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == nil {
		b.state = map[Spec]*breaker{}
	}
	b.state[spec] = &breaker{openUntil: b.now().Add(b.cooldown())}
}

// Release ends a half-open trial that made no call (the request was never
// sent), so the next call may try the model.
func (b *Breakers) Release(spec Spec) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if br := b.state[spec]; br != nil {
		br.trial = false
	}
}

// FailsOver reports whether err, from one model of a chain, lets the next
// model answer the same request: an outage of the provider (a 5xx, a
// timeout or stall, a connection that failed, an empty answer) or a rate
// limit. A rejected key or request would be rejected by the next model
// too, or is the caller's to fix: it does not fail over.
func FailsOver(err error) bool {
	var le *Error
	if !errors.As(err, &le) {
		return false
	}
	return le.Retryable()
}
