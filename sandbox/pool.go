package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// warmPool keeps up to size sandboxes started and waiting for their input,
// so a run does not pay for starting one. Each serves one run and is
// replaced in the background; none is ever reused. A pool starts empty and
// fills on its first replenish: the runner asks for that when its profile
// is first used, so languages nobody uses cost nothing.
type warmPool[T any] struct {
	what    string // for logs: the profile it serves
	size    int
	launch  func(context.Context) (T, error)
	discard func(T)
	log     *slog.Logger

	mu      sync.Mutex
	idle    []T
	closed  bool
	started bool // replenish was called: the pool is filling or full
	retired bool // launch returned errRetired: it fills no more

	refill chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

func newWarmPool[T any](what string, size int, log *slog.Logger, launch func(context.Context) (T, error), discard func(T)) *warmPool[T] {
	p := &warmPool[T]{what: what, size: size, launch: launch, discard: discard, log: log,
		refill: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

// errRetired, from a pool's launch, means that what its sandboxes need is
// gone for good (the install they mount): the pool starts no more.
var errRetired = errors.New("warm pool retired")

// replenish asks for the pool to be filled up again.
func (p *warmPool[T]) replenish() {
	p.mu.Lock()
	p.started = true
	p.mu.Unlock()
	select {
	case p.refill <- struct{}{}:
	default:
	}
}

// take returns the oldest warm sandbox, if any. The caller calls replenish
// once its run is over: a replacement starting at once would compete with
// that run for the CPU.
func (p *warmPool[T]) take() (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var zero T
	if len(p.idle) == 0 {
		return zero, false
	}
	b := p.idle[0]
	p.idle[0] = zero
	p.idle = p.idle[1:]
	return b, true
}

// snapshot lists the idle sandboxes; tests use it to tell them from leaks.
func (p *warmPool[T]) snapshot() []T {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]T(nil), p.idle...)
}

func (p *warmPool[T]) full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle) >= p.size
}

// warming reports whether the pool was asked to fill and may still.
func (p *warmPool[T]) warming() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started && !p.retired
}

// isRetired reports whether the pool's launch said it can start no more.
func (p *warmPool[T]) isRetired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retired
}

func (p *warmPool[T]) loop() {
	defer close(p.done)
	backoff := time.Second
	for {
		select {
		case <-p.stop:
			return
		case <-p.refill:
		}
		for !p.full() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			b, err := p.launch(ctx)
			cancel()
			if errors.Is(err, errRetired) {
				p.log.Debug("sandbox: warm pool retired", "profile", p.what, "err", err)
				p.mu.Lock()
				p.retired = true
				p.mu.Unlock()
				return
			}
			if err != nil {
				p.log.Warn("sandbox: warm pool refill failed", "profile", p.what, "err", err)
				select {
				case <-p.stop:
					return
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, time.Minute)
				continue
			}
			backoff = time.Second
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				p.discard(b)
				return
			}
			p.idle = append(p.idle, b)
			p.mu.Unlock()
		}
	}
}

// close stops refilling and discards the idle sandboxes.
func (p *warmPool[T]) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	close(p.stop)
	<-p.done
	for _, b := range idle {
		p.discard(b)
	}
}
