package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/bytesize"
	"github.com/autocoder/autocoder/internal/truncate"
)

// Tool is a function the model may call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON schema of the call's arguments, an object schema.
	Parameters json.RawMessage `json:"parameters"`
}

// Role says who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool" // the result of one tool call
)

// Message is one message of a conversation.
type Message struct {
	Role Role   `json:"role"`
	Text string `json:"text,omitempty"`
	// ToolCalls are the calls an assistant message made, in order.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Result is what a tool message answers.
	Result *ToolResult `json:"result,omitempty"`
	// Model is the "provider:model" that wrote an assistant message, and
	// FellBack why the models before it in the task's chain did not.
	Model    string `json:"model,omitempty"`
	FellBack string `json:"fell_back,omitempty"`
}

// ToolCall is one call the model made.
type ToolCall struct {
	// ID pairs the call with its result; providers that give none get one
	// of ours so results can always be matched.
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON the model wrote, kept as text: a model can write
	// invalid JSON, and the loop reports that back instead of losing it.
	Arguments string `json:"arguments"`
	// Signature is opaque data the provider attached to the call and wants
	// back with it (Gemini's thought signature); empty for most.
	Signature string `json:"signature,omitempty"`
	// Problem, when set, says why the call is not run (see ScreenCalls);
	// the loop answers it with this text as an error result. It is ours:
	// providers never see it.
	Problem string `json:"problem,omitempty"`
}

// ToolResult is the answer to one tool call. It carries the tool's name as
// well as the call's id: some providers match results by name.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Conversation is what a model is shown on a turn: system messages, then
// user, assistant and tool messages in order. Providers without system
// messages in the middle of a conversation (Anthropic) join all system
// messages into one instruction.
type Conversation struct {
	Messages []Message `json:"messages"`
}

// Append adds messages at the end.
func (c *Conversation) Append(m ...Message) { c.Messages = append(c.Messages, m...) }

// TurnOptions tune one turn.
type TurnOptions struct {
	MaxTokens int
	// Stream asks for the answer as it is written, keeping the connection
	// busy during a long answer.
	Stream bool
	// OnText, when set, gets the model's text as it streams (never the
	// JSON of tool calls); setting it implies Stream.
	OnText func(chunk string)
}

// StopReason says why a turn ended, the same for every provider.
type StopReason string

const (
	StopEnd       StopReason = "end"        // the model finished its answer
	StopToolUse   StopReason = "tool_use"   // the model waits for tool results
	StopMaxTokens StopReason = "max_tokens" // the answer was cut at MaxTokens
	StopOther     StopReason = "other"      // refusal, content filter, unknown
)

// Usage is what a turn cost in tokens, the same for every provider.
// InputTokens counts the whole prompt; of it, CacheReadTokens were read
// from the provider's prompt cache and CacheWriteTokens written to it,
// each billed at its own price (see Price). The rest is fresh input.
type Usage struct {
	InputTokens      int `json:"input_tokens"`
	OutputTokens     int `json:"output_tokens"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// FreshTokens is the input neither read from nor written to the cache.
func (u Usage) FreshTokens() int {
	return max(u.InputTokens-u.CacheReadTokens-u.CacheWriteTokens, 0)
}

// TurnResult is the model's side of one turn.
type TurnResult struct {
	Text       string     `json:"text,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	Usage      Usage      `json:"usage"`
	StopReason StopReason `json:"stop_reason"`
	// ProviderStop is the provider's own word for StopReason, for logs.
	ProviderStop string `json:"provider_stop,omitempty"`
	// Model is the "provider:model" that answered; FellBack, from a
	// Chain, says why the models before it did not ("anthropic:x: HTTP 503").
	Model    string `json:"model,omitempty"`
	FellBack string `json:"fell_back,omitempty"`
}

// Message is the assistant message to append to the conversation.
func (r TurnResult) Message() Message {
	return Message{Role: RoleAssistant, Text: r.Text, ToolCalls: r.ToolCalls, Model: r.Model, FellBack: r.FellBack}
}

var (
	// ErrNoToolCalling reports tools offered to a model that cannot call
	// them; see Model.ToolCalling.
	ErrNoToolCalling = errors.New("model has no native tool calling")
	// ErrBadConversation reports a conversation no provider would accept.
	ErrBadConversation = errors.New("invalid conversation")
)

// toolName is what OpenAI and Anthropic both accept as a tool name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func validateTools(tools []Tool) error {
	seen := map[string]bool{}
	for _, t := range tools {
		if !toolName.MatchString(t.Name) {
			return fmt.Errorf("%w: tool name %q must be 1-64 letters, digits, _ or -", ErrBadConversation, t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("%w: tool %q is offered twice", ErrBadConversation, t.Name)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 {
			if _, err := argumentsObject(string(t.Parameters)); err != nil {
				return fmt.Errorf("%w: tool %q parameters: %w", ErrBadConversation, t.Name, err)
			}
		}
	}
	return nil
}

// Validate checks what both OpenAI and Anthropic require of a
// conversation, so a mistake is reported here, by position, instead of as
// a provider's HTTP 400: every tool call has an id and is answered, each by
// one tool message following its assistant message, before anything else.
func (c Conversation) Validate() error {
	open := map[string]string{} // id to name of the last assistant message's unanswered calls
	pending := 0
	bad := func(i int, format string, args ...any) error {
		return fmt.Errorf("%w: message %d: %s", ErrBadConversation, i, fmt.Sprintf(format, args...))
	}
	for i, m := range c.Messages {
		if m.Role != RoleTool && pending > 0 {
			return bad(i, "%d tool call(s) of the previous assistant message have no result", pending)
		}
		switch m.Role {
		case RoleSystem, RoleUser:
			if m.Text == "" {
				return bad(i, "%s message has no text", m.Role)
			}
		case RoleAssistant:
			clear(open)
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return bad(i, "tool call without id or name")
				}
				if _, dup := open[tc.ID]; dup {
					return bad(i, "tool call id %q used twice", tc.ID)
				}
				open[tc.ID] = tc.Name
			}
			pending = len(m.ToolCalls)
			if m.Text == "" && pending == 0 {
				return bad(i, "assistant message has neither text nor tool calls")
			}
		case RoleTool:
			r := m.Result
			if r == nil {
				return bad(i, "tool message has no result")
			}
			name, ok := open[r.CallID]
			if !ok {
				return bad(i, "tool result for call %q (%s) answers no open call of the previous assistant message", r.CallID, r.Name)
			}
			if name != r.Name {
				return bad(i, "tool result for call %q names tool %q, the call was to %q", r.CallID, r.Name, name)
			}
			delete(open, r.CallID)
			pending--
		default:
			return bad(i, "unknown role %q", m.Role)
		}
	}
	if pending > 0 {
		return fmt.Errorf("%w: %d tool call(s) of the last assistant message have no result", ErrBadConversation, pending)
	}
	return nil
}

// argumentsObject reads tool-call arguments as the JSON object providers
// require; no arguments at all is an empty object.
func argumentsObject(args string) (json.RawMessage, error) {
	b := bytes.TrimSpace([]byte(args))
	if len(b) == 0 {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
		return nil, errors.New("not a JSON object")
	}
	return json.RawMessage(b), nil
}

// InvalidToolName stands in for a called name no provider would take back
// in the conversation (empty, over 64 bytes, other characters); the call's
// Problem quotes what the model wrote.
const InvalidToolName = "invalid_tool_name"

// ScreenCalls returns a turn's calls made fit to keep and to send back,
// each with a Problem when the model got its form wrong, so that one
// malformed call costs the model a tool result instead of costing the
// task: the conversation must answer every call once, under an id no other
// call of the turn has and a name both providers accept.
//
//   - A call whose name is not a tool name is renamed InvalidToolName.
//   - A call reusing the id of an earlier call of the turn is given an id
//     of ours, in the assistant message and in its result alike, and is not
//     run: two calls under one id cannot be told apart by the model, and
//     anything keyed by the id (a sandbox call's memo) stays one per call.
//   - A call without an id, or with the id of a call of an earlier turn
//     (servers that number calls per turn do that; Anthropic refuses a
//     conversation repeating a tool_use id), gets one of ours and runs.
//   - Arguments over MaxToolArgumentBytes are replaced by a note of their
//     size: they would be stored and sent back on every later turn.
//
// earlier is the conversation before the turn. Screening is idempotent,
// so an answer screened before it was memoized, and screened again when
// reused, comes out the same.
func ScreenCalls(calls []ToolCall, earlier []Message) []ToolCall {
	if len(calls) == 0 {
		return calls
	}
	out := slices.Clone(calls)
	taken := map[string]bool{}
	for _, m := range earlier {
		for _, c := range m.ToolCalls {
			taken[c.ID] = true
		}
	}
	before := maps.Clone(taken)
	for _, c := range out {
		taken[c.ID] = true
	}
	fresh := func(i int) string {
		for n := 0; ; n++ {
			id := fmt.Sprintf("call_%d_%d", i, n)
			if !taken[id] {
				taken[id] = true
				return id
			}
		}
	}
	written := make(map[string]bool, len(out)) // the turn's ids so far, as the model wrote them
	for i := range out {
		c := &out[i]
		var problems []string
		if !toolName.MatchString(c.Name) {
			if c.Name == "" {
				problems = append(problems, "it names no tool")
			} else {
				problems = append(problems, fmt.Sprintf("%q is not a tool name (1-64 letters, digits, _ or -)", truncate.Quote(c.Name, 64)))
			}
			c.Name = InvalidToolName
		}
		switch id := c.ID; {
		case id != "" && written[id]:
			c.ID = fresh(i)
			problems = append(problems, fmt.Sprintf("its id %q is the id of an earlier call of this turn, so it is answered as %q", truncate.Quote(id, 64), c.ID))
		case id == "" || before[id]:
			c.ID = fresh(i)
		}
		written[calls[i].ID] = true
		if n := len(c.Arguments); n > MaxToolArgumentBytes {
			var problem string
			c.Arguments, problem = tooLarge(n)
			problems = append(problems, problem)
		}
		if len(problems) > 0 && c.Problem == "" {
			c.Problem = notRun(problems...)
		}
	}
	return out
}

// notRun is the Problem of a call refused for problems.
func notRun(problems ...string) string {
	return "not run: " + strings.Join(problems, "; ") + ". Make the call again, corrected, if you still need it."
}

// tooLarge is what a call keeps of arguments of n bytes, over
// MaxToolArgumentBytes, and the problem that says so.
func tooLarge(n int) (args, problem string) {
	return fmt.Sprintf(`{"omitted": "%d bytes of arguments, over the limit"}`, n),
		fmt.Sprintf("its arguments are %s, more than the %s a call may carry (write a large file in parts: write the first part, then add the rest with edit, or generate it with a run command)",
			bytesize.Format(int64(n)), bytesize.Format(MaxToolArgumentBytes))
}

// argBuffer gathers a streamed call's arguments in one buffer, not by
// joining strings (streams send them a few bytes at a time, so joining
// costs time quadratic in their size: 20 s for 1 MiB), and only up to
// MaxToolArgumentBytes: past it the bytes are counted, not kept, so a
// flood of arguments costs no memory.
type argBuffer struct {
	b strings.Builder
	n int
}

func (a *argBuffer) WriteString(s string) {
	a.n += len(s)
	if a.n <= MaxToolArgumentBytes {
		a.b.WriteString(s)
	}
}

// into gives c the arguments, or, past the limit, refuses it as
// ScreenCalls would.
func (a *argBuffer) into(c *ToolCall) {
	if a.n <= MaxToolArgumentBytes {
		c.Arguments = a.b.String()
		return
	}
	var problem string
	c.Arguments, problem = tooLarge(a.n)
	c.Problem = notRun(problem)
}
