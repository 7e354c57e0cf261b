package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
)

// scriptedModel answers from a list of errors, one per call (nil: an
// answer), and counts its calls.
type scriptedModel struct {
	spec  llm.Spec
	errs  []error
	calls int
	tools bool
}

func (m *scriptedModel) next() error {
	m.calls++
	if len(m.errs) == 0 {
		return nil
	}
	err := m.errs[0]
	m.errs = m.errs[1:]
	return err
}

func (m *scriptedModel) Complete(context.Context, llm.Request) (llm.Response, error) {
	if err := m.next(); err != nil {
		return llm.Response{}, err
	}
	return llm.Response{Text: "ok", Model: m.spec.String()}, nil
}

func (m *scriptedModel) Turn(context.Context, llm.Conversation, []llm.Tool, llm.TurnOptions) (llm.TurnResult, error) {
	if err := m.next(); err != nil {
		return llm.TurnResult{}, err
	}
	return llm.TurnResult{Text: "ok", Model: m.spec.String()}, nil
}

func (m *scriptedModel) ToolCalling() bool { return m.tools }

func status(code int, kind llm.ErrorKind) error {
	return &llm.Error{Kind: kind, Status: code, Err: errors.New("provider said no")}
}

func chainOf(clk *clock, models ...*scriptedModel) *llm.Chain {
	c := &llm.Chain{Breakers: &llm.Breakers{Cooldown: time.Minute, Now: clk.now}}
	for _, m := range models {
		c.Links = append(c.Links, llm.Link{Spec: m.spec, Model: m})
	}
	return c
}

var (
	specA = llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5"}
	specB = llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}
)

func TestChainFailsOverOnOutagesOnly(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		fallback bool
	}{
		{"5xx", status(503, llm.KindTransient), true},
		{"timeout", &llm.Error{Kind: llm.KindTransient, Err: &llm.StallError{Waited: time.Minute}}, true},
		{"rate limit", status(429, llm.KindRateLimited), true},
		{"bad request", status(400, llm.KindInvalidRequest), false},
		{"bad key", status(401, llm.KindAuth), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(0, 0)}
			a, b := &scriptedModel{spec: specA, errs: []error{c.err}}, &scriptedModel{spec: specB}
			res, err := chainOf(clk, a, b).Complete(context.Background(), llm.Request{Prompt: "hi"})
			if !c.fallback {
				var le *llm.Error
				if err == nil || b.calls != 0 || !errors.As(err, &le) || le.Retryable() || !strings.Contains(err.Error(), "not failed over to "+specB.String()) {
					t.Fatalf("a %s failed over (next model called %d times) or lost its class: %v", c.name, b.calls, err)
				}
				return
			}
			if err != nil || res.Model != specB.String() || !strings.HasPrefix(res.FellBack, specA.String()+": ") {
				t.Fatalf("a %s: answer %+v, %v; want one from %s that fell back from %s", c.name, res, err, specB, specA)
			}
		})
	}
}

func TestChainSkipsAnOpenBreakerUntilItsCooldownEnds(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	a := &scriptedModel{spec: specA, errs: []error{status(500, llm.KindTransient)}, tools: true}
	b := &scriptedModel{spec: specB, tools: true}
	c := chainOf(clk, a, b)
	ctx := context.Background()
	conv := llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}

	res, err := c.Turn(ctx, conv, nil, llm.TurnOptions{})
	if err != nil || res.Model != specB.String() || res.FellBack != specA.String()+": HTTP 500" {
		t.Fatalf("first turn: %+v, %v", res, err)
	}
	res, err = c.Turn(ctx, conv, nil, llm.TurnOptions{})
	if err != nil || a.calls != 1 || res.Model != specB.String() || !strings.Contains(res.FellBack, "failed recently") {
		t.Fatalf("during the cooldown: %d calls to %s, answer %+v, %v; want it passed over", a.calls, specA, res, err)
	}
	clk.advance(time.Minute)
	res, err = c.Turn(ctx, conv, nil, llm.TurnOptions{})
	if err != nil || a.calls != 2 || res.Model != specA.String() || res.FellBack != "" {
		t.Fatalf("after the cooldown: %d calls to %s, answer %+v, %v; want it to answer again", a.calls, specA, res, err)
	}
	if c.Breakers.State(specA) != llm.BreakerClosed {
		t.Errorf("breaker of %s after its answer: %v, want closed", specA, c.Breakers.State(specA))
	}
}

func TestChainWithEveryModelFailing(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	a := &scriptedModel{spec: specA, errs: []error{status(502, llm.KindTransient), status(502, llm.KindTransient)}}
	b := &scriptedModel{spec: specB, errs: []error{status(429, llm.KindRateLimited), status(429, llm.KindRateLimited)}}
	c := chainOf(clk, a, b)
	_, err := c.Complete(context.Background(), llm.Request{Prompt: "hi"})
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindRateLimited || !strings.Contains(err.Error(), "every model of the chain failed") {
		t.Fatalf("every model failing: %v; want the last one's rate limit, naming every failure", err)
	}
	// Every breaker is open: each model is tried again, as if none were.
	if _, err := c.Complete(context.Background(), llm.Request{Prompt: "hi"}); err == nil || a.calls != 2 || b.calls != 2 {
		t.Fatalf("with every breaker open: calls %d and %d, %v; want each tried once more", a.calls, b.calls, err)
	}
}

func TestChainPassesOverModelsWithoutToolsWhenToolsAreOffered(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	a := &scriptedModel{spec: specA, errs: []error{status(500, llm.KindTransient)}, tools: true}
	b := &scriptedModel{spec: llm.Spec{Provider: llm.ProviderOllama, Model: "codellama"}}
	c := chainOf(clk, a, b)
	tools := []llm.Tool{{Name: "read"}}
	_, err := c.Turn(context.Background(), llm.Conversation{}, tools, llm.TurnOptions{})
	if err == nil || b.calls != 0 {
		t.Fatalf("a model without tool calling was offered tools (%d calls): %v", b.calls, err)
	}
}

// TestHalfOpenFallbackStaysAvailable: a fallback whose cooldown ended is
// still there for the next outage when the first model answered in
// between (its trial, allowed but unused, ends with that call).
func TestHalfOpenFallbackStaysAvailable(t *testing.T) {
	clk := &clock{t: time.Unix(0, 0)}
	a := &scriptedModel{spec: specA, errs: []error{nil, status(503, llm.KindTransient)}, tools: true}
	b := &scriptedModel{spec: specB, tools: true}
	c := chainOf(clk, a, b)
	c.Breakers.Failure(specB)
	clk.advance(time.Hour)
	ctx := context.Background()
	conv := llm.Conversation{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}
	if res, err := c.Turn(ctx, conv, nil, llm.TurnOptions{}); err != nil || res.Model != specA.String() {
		t.Fatalf("first turn: %+v, %v; want %s to answer", res, err, specA)
	}
	res, err := c.Turn(ctx, conv, nil, llm.TurnOptions{})
	if err != nil || res.Model != specB.String() || b.calls != 1 {
		t.Fatalf("on %s's outage: %+v, %v, %d calls to %s; want the fallback to answer", specA, res, err, b.calls, specB)
	}
}
