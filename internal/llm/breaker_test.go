package llm_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
)

// clock is a settable time for the breakers.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestBreakerOpensCoolsDownAndCloses(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := &llm.Breakers{Cooldown: time.Minute, Now: clk.now}
	a := llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5"}
	o := llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}

	if !b.Allow(a) || b.State(a) != llm.BreakerClosed {
		t.Fatal("a new breaker must be closed")
	}
	b.Failure(a)
	if b.Allow(a) || b.State(a) != llm.BreakerOpen {
		t.Fatal("a failed model must be passed over")
	}
	if !b.Allow(o) {
		t.Fatal("one model's failure opened another's breaker")
	}
	clk.advance(59 * time.Second)
	if b.Allow(a) {
		t.Fatal("passed over for less than the cooldown")
	}
	clk.advance(time.Second)
	if b.State(a) != llm.BreakerHalfOpen {
		t.Fatalf("state after the cooldown = %v, want half-open", b.State(a))
	}
	if !b.Allow(a) {
		t.Fatal("a half-open breaker must let one call try")
	}
	if b.Allow(a) {
		t.Fatal("a half-open breaker let a second call try at once")
	}
	b.Release(a)
	if !b.Allow(a) {
		t.Fatal("a released trial must let the next call try")
	}
	b.Failure(a) // the trial failed: another cooldown
	if b.Allow(a) || b.State(a) != llm.BreakerOpen {
		t.Fatal("a failed trial must open the breaker again")
	}
	clk.advance(time.Minute)
	if !b.Allow(a) {
		t.Fatal("half-open again after the second cooldown")
	}
	b.Success(a)
	if b.State(a) != llm.BreakerClosed || !b.Allow(a) || !b.Allow(a) {
		t.Fatal("a success must close the breaker")
	}
}

func TestNilBreakersAllowEverything(t *testing.T) {
	var b *llm.Breakers
	s := llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}
	b.Failure(s)
	if !b.Allow(s) {
		t.Fatal("nil breakers refused a call")
	}
}

func TestFailsOverByErrorClass(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"5xx", &llm.Error{Kind: llm.KindTransient, Status: http.StatusServiceUnavailable, Err: errors.New("503")}, true},
		{"timeout", &llm.Error{Kind: llm.KindTransient, Err: &llm.StallError{Waited: time.Minute}}, true},
		{"429", &llm.Error{Kind: llm.KindRateLimited, Status: http.StatusTooManyRequests, Err: errors.New("429")}, true},
		{"wrapped 500", fmt.Errorf("turn: %w", &llm.Error{Kind: llm.KindTransient, Status: 500, Err: errors.New("500")}), true},
		{"401", &llm.Error{Kind: llm.KindAuth, Status: http.StatusUnauthorized, Err: errors.New("401")}, false},
		{"400", &llm.Error{Kind: llm.KindInvalidRequest, Status: http.StatusBadRequest, Err: errors.New("400")}, false},
		{"unclassified", errors.New("boom"), false},
	}
	for _, c := range cases {
		if got := llm.FailsOver(c.err); got != c.want {
			t.Errorf("%s: FailsOver = %v, want %v", c.name, got, c.want)
		}
	}
}
