package llm

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Link is one model of a Chain.
type Link struct {
	Spec  Spec
	Model Model
}

// Chain is a Model that asks its links in order: when one fails with an
// outage (see FailsOver), the next answers the same request, within the
// same call, so a request is sent at most once to each model. Links whose
// breaker is open are passed over while another can answer; when every
// breaker is open, every link is tried in order, as if none were. A
// rejected key or request does not fail over: the error says so.
type Chain struct {
	Links    []Link
	Breakers *Breakers
}

// ChainSeparator separates the models of a chain written as one name:
// "anthropic:claude-sonnet-4-5,openai:gpt-4.1".
const ChainSeparator = ","

// ToolCalling is the first link's: a chain whose first model takes tools
// offers them, and passes over links that do not.
func (c *Chain) ToolCalling() bool { return len(c.Links) > 0 && c.Links[0].Model.ToolCalling() }

// Complete asks the links in order for one answer.
func (c *Chain) Complete(ctx context.Context, req Request) (Response, error) {
	var out Response
	fellBack, err := c.each(ctx, func(l Link) error { return nil }, func(ctx context.Context, l Link) (err error) {
		out, err = l.Model.Complete(ctx, req)
		return err
	})
	out.FellBack = fellBack
	return out, err
}

// Turn asks the links in order for the next turn; with tools on offer, a
// link without tool calling is passed over.
func (c *Chain) Turn(ctx context.Context, conv Conversation, tools []Tool, opts TurnOptions) (TurnResult, error) {
	usable := func(l Link) error {
		if len(tools) > 0 && !l.Model.ToolCalling() {
			return ErrNoToolCalling
		}
		return nil
	}
	var out TurnResult
	fellBack, err := c.each(ctx, usable, func(ctx context.Context, l Link) (err error) {
		out, err = l.Model.Turn(ctx, conv, tools, opts)
		return err
	})
	out.FellBack = fellBack
	return out, err
}

// each calls call with the links in order until one answers, and returns
// why the links before it did not ("anthropic:claude-sonnet-4-5: HTTP 503").
func (c *Chain) each(ctx context.Context, usable func(Link) error, call func(context.Context, Link) error) (string, error) {
	order, passed := c.order(usable)
	reasons := append([]string(nil), passed...)
	var last error
	// The links after the one that answers were allowed but not called:
	// a half-open one's trial ends unused, so the next call may try it.
	unused := func(i int) {
		for _, l := range order[i+1:] {
			c.Breakers.Release(l.Spec)
		}
	}
	for i, l := range order {
		err := call(ctx, l)
		if err == nil {
			c.Breakers.Success(l.Spec)
			unused(i)
			return strings.Join(reasons, "; "), nil
		}
		last = err
		if ctx.Err() != nil || !FailsOver(err) {
			c.Breakers.Release(l.Spec)
			unused(i)
			return "", notFailedOver(err, order[i+1:])
		}
		c.Breakers.Failure(l.Spec)
		reasons = append(reasons, l.Spec.String()+": "+shortReason(err))
	}
	if last == nil {
		return "", &Error{Kind: KindInvalidRequest, Err: fmt.Errorf("no model of the chain can answer: %s", strings.Join(reasons, "; "))}
	}
	return "", everyLinkFailed(last, reasons)
}

// order is the links to try, in order, and why the others are passed
// over: open breakers, unless every usable link's is open.
func (c *Chain) order(usable func(Link) error) ([]Link, []string) {
	var ok, open []Link
	var passed []string
	for _, l := range c.Links {
		if err := usable(l); err != nil {
			passed = append(passed, l.Spec.String()+": "+err.Error())
			continue
		}
		if !c.Breakers.Allow(l.Spec) {
			open = append(open, l)
			continue
		}
		ok = append(ok, l)
	}
	if len(ok) == 0 {
		return open, passed
	}
	for _, l := range open {
		passed = append(passed, l.Spec.String()+": failed recently, passed over until "+c.Breakers.Retry(l.Spec).UTC().Format("15:04:05"))
	}
	return ok, passed
}

// shortReason names a failure in a few words: its HTTP status, else its
// class.
func shortReason(err error) string {
	var le *Error
	if errors.As(err, &le) {
		var stall *StallError
		switch {
		case le.Status > 0:
			return fmt.Sprintf("HTTP %d", le.Status)
		case errors.As(err, &stall):
			return "timed out"
		case errors.Is(err, ErrEmptyResponse):
			return "empty answer"
		}
		return le.Kind.String()
	}
	return "failed"
}

// notFailedOver says, on an error that does not fail over, which models
// were not asked, keeping its class.
func notFailedOver(err error, rest []Link) error {
	var le *Error
	if len(rest) == 0 || !errors.As(err, &le) {
		return err
	}
	names := make([]string, len(rest))
	for i, l := range rest {
		names[i] = l.Spec.String()
	}
	return &Error{Kind: le.Kind, Status: le.Status, RetryAfter: le.RetryAfter,
		Err: fmt.Errorf("%w (not failed over to %s: a rejected key or request is not an outage; fix it and try again)", le.Err, strings.Join(names, ", "))}
}

// everyLinkFailed is the last link's error, keeping its class (a rate
// limit's delay), naming every failure.
func everyLinkFailed(last error, reasons []string) error {
	var le *Error
	if len(reasons) < 2 || !errors.As(last, &le) {
		return last
	}
	return &Error{Kind: le.Kind, Status: le.Status, RetryAfter: le.RetryAfter,
		Err: fmt.Errorf("every model of the chain failed (%s): %w", strings.Join(reasons, "; "), le.Err)}
}
