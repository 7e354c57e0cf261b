package activities

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/autocoder/autocoder/internal/llm"
)

// DefaultContextTokens is a turn's context budget when the workflow sets
// none: well inside every supported model's window, with room for the
// answer.
const DefaultContextTokens = 64_000

// approxTokens estimates the tokens of a text as a quarter of its bytes,
// close to real tokenizers on English and code and never a call away.
func approxTokens(n int) int { return (n + 3) / 4 }

// messageBudget is what a turn's context budget leaves for the messages
// once the tool definitions, sent with every request, are counted; zero
// means DefaultContextTokens. It is at least one token.
func messageBudget(budget int, offered []llm.Tool) int {
	if budget <= 0 {
		budget = DefaultContextTokens
	}
	for _, t := range offered {
		budget -= approxTokens(len(t.Name) + len(t.Description) + len(t.Parameters))
	}
	return max(budget, 1)
}

// messageTokens estimates what one message costs in a request, with a few
// tokens for its framing.
func messageTokens(m llm.Message) int {
	n := len(m.Text)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	if m.Result != nil {
		n += len(m.Result.Content)
	}
	return approxTokens(n) + 4
}

// requestTokens estimates what messages cost in a request.
func requestTokens(msgs []llm.Message) int {
	total := 0
	for _, m := range msgs {
		total += messageTokens(m)
	}
	return total
}

// elideTo is the share of the budget eliding brings a request down to:
// below the budget, so that the turns after it fit without eliding more.
const elideToNum, elideToDen = 2, 3

// fitContext returns the conversation to send when the stored one costs
// more than budget tokens (see messageBudget): the outputs of older tool
// calls, oldest first, are replaced by a marker naming the call, so the
// model knows what it no longer sees and how to see it again. The results
// answering the last assistant message, which the model is about to read,
// are kept. The stored transcript is not touched: msgs is copied before
// any change. It also returns how many outputs were elided. When that is
// not enough, ModelTurn has the older turns summarized (see Summarize).
//
// What a turn sends begins with exactly what the turn before it sent, so
// the provider's prompt cache serves it (see llm's cache breakpoints):
// eliding rewrites that prefix, so it happens only when a request is over
// the budget, and then once for a while, down to elideTo of the budget.
// The elisions are found by replaying the conversation's turns (each
// assistant message answered the messages before it), so every turn
// elides what the turns before it did, and more only when it must.
func fitContext(msgs []llm.Message, budget int) ([]llm.Message, int) {
	if requestTokens(msgs) <= budget {
		return msgs, 0
	}
	out := slices.Clone(msgs)
	calls := map[string]llm.ToolCall{}
	elided, next := 0, 0 // next: the first message not yet considered for eliding
	sent := 0            // tokens of out[:end]
	lastAssistant := -1  // before end
	for end := 0; end <= len(out); end++ {
		request := end == len(out) || out[end].Role == llm.RoleAssistant
		if request && sent > budget {
			target := budget * elideToNum / elideToDen
			for ; next < lastAssistant && sent > target; next++ {
				for _, c := range out[next].ToolCalls {
					calls[c.ID] = c
				}
				saved := elide(&out[next], calls)
				sent -= saved
				if saved > 0 {
					elided++
				}
			}
		}
		if end < len(out) {
			sent += messageTokens(out[end])
			if out[end].Role == llm.RoleAssistant {
				lastAssistant = end
			}
		}
	}
	return out, elided
}

// elide replaces the output of a tool message by its marker when that is
// shorter, and returns the tokens saved.
func elide(m *llm.Message, calls map[string]llm.ToolCall) int {
	if m.Role != llm.RoleTool || m.Result == nil {
		return 0
	}
	r := *m.Result
	marker := elisionMarker(calls[r.CallID], len(r.Content))
	if len(marker) >= len(r.Content) {
		return 0
	}
	before := messageTokens(*m)
	r.Content = marker
	m.Result = &r
	return before - messageTokens(*m)
}

// elisionMarker stands for an elided tool output.
func elisionMarker(c llm.ToolCall, size int) string {
	return fmt.Sprintf("[output elided to fit the context: %s %s returned %d bytes here; call it again if you need them]",
		c.Name, clip(c.Arguments, 200), size)
}

// sendableArguments returns msgs with every tool call's arguments a JSON
// object, as providers require of the calls sent back to them. A model can
// write arguments that are not one (cut off at its token limit, or just
// wrong); the tool's result already told it so, and resending the text
// wrapped in an object keeps the conversation going instead of failing
// every later request. The stored transcript keeps what the model wrote.
func sendableArguments(msgs []llm.Message) []llm.Message {
	unparsed := func(c llm.ToolCall) bool { return !isJSONObject(c.Arguments) }
	var out []llm.Message
	for i, m := range msgs {
		if !slices.ContainsFunc(m.ToolCalls, unparsed) {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		calls := slices.Clone(m.ToolCalls)
		for j, c := range calls {
			if unparsed(c) {
				wrapped, _ := json.Marshal(map[string]string{"unparsed_arguments": c.Arguments}) // a string map always encodes
				calls[j].Arguments = string(wrapped)
			}
		}
		out[i].ToolCalls = calls
	}
	if out == nil {
		return msgs
	}
	return out
}

// isJSONObject reports whether args is a JSON object, or empty (no
// arguments), which clients send as {}.
func isJSONObject(args string) bool {
	if strings.TrimSpace(args) == "" {
		return true
	}
	var obj map[string]json.RawMessage
	return json.Unmarshal([]byte(args), &obj) == nil && obj != nil
}
