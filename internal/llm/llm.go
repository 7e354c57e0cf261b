// Package llm puts the language models autocoder talks to behind one small
// interface, built over langchaingo.
package llm

import (
	"context"
	"time"
)

// Request is one completion request.
type Request struct {
	System    string
	Prompt    string
	MaxTokens int
	// Stream asks for the answer as it is written: a long answer then
	// keeps its connection busy instead of idle until the end.
	Stream bool
	// OnChunk, when set, is called as streamed output arrives; setting it
	// implies Stream.
	OnChunk func(chunk string)
}

// Response is the model's answer and what it cost.
type Response struct {
	Text             string
	PromptTokens     int
	CompletionTokens int
	// Model is the "provider:model" that answered; FellBack, from a
	// Chain, says why the models before it did not.
	Model    string `json:",omitempty"`
	FellBack string `json:",omitempty"`
}

// Model completes prompts and takes turns of a tool-using conversation.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
	Turn(ctx context.Context, conv Conversation, tools []Tool, opts TurnOptions) (TurnResult, error)
	// ToolCalling reports whether Turn can offer tools; when it cannot,
	// callers ask for fenced blocks through Complete instead.
	ToolCalling() bool
}

// ErrorKind classifies a provider failure so callers can decide to retry.
type ErrorKind int

const (
	KindTransient      ErrorKind = iota // network trouble, 5xx: retry
	KindRateLimited                     // 429: retry after RetryAfter
	KindAuth                            // 401/403: never retry
	KindInvalidRequest                  // 400/404/422: never retry
)

// Error is a classified provider error.
type Error struct {
	Kind       ErrorKind
	Status     int           // HTTP status when known
	RetryAfter time.Duration // for KindRateLimited, when the provider said
	Err        error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether trying again can help.
func (e *Error) Retryable() bool { return e.Kind == KindTransient || e.Kind == KindRateLimited }
