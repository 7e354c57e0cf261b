package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/mcptools"
	"github.com/autocoder/autocoder/internal/store"
)

// MCPTools are the tools of the user's MCP servers ([[mcp_servers]]),
// offered beside the built-in ones.
type MCPTools interface {
	// Tools lists the allowed tools of the servers that answer.
	Tools(ctx context.Context) []mcptools.Tool
	// Call runs a tool; every failure is a result for the model.
	Call(ctx context.Context, name string, args json.RawMessage) mcptools.Result
	// Ask reports whether the tool's calls wait for a person.
	Ask(name string) bool
}

// IsMCPTool reports whether the model's call goes to an MCP server.
func IsMCPTool(name string) bool { return mcptools.IsTool(name) }

// mcpToolDefs are the MCP tools in the model's terms.
func (a *Activities) mcpToolDefs(ctx context.Context) []llm.Tool {
	if a.MCP == nil {
		return nil
	}
	stop := heartbeatWhile(ctx, ModelCall{Since: time.Now()}) // a server may take seconds to start
	defer stop()
	var out []llm.Tool
	for _, t := range a.MCP.Tools(ctx) {
		out = append(out, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Schema})
	}
	return out
}

// MCPCallInput runs one MCP tool call of the model's last turn and appends
// its result to the transcript at Position.
type MCPCallInput struct {
	Transcript string `json:"transcript"`
	Position   int    `json:"position"`
	CallID     string `json:"callId"`
}

// MCPCallOutput is the transcript's new length and the call's outcome in
// brief, for status.
type MCPCallOutput struct {
	Length  int  `json:"length"`
	IsError bool `json:"isError,omitempty"`
	Bytes   int  `json:"bytes"`
}

// MemoKey names the memo that keeps the call's outcome from its first
// try on. It is exported so that a check from outside the worker (a test
// that kills it inside the call) finds the memo where MCPCall does.
func (in MCPCallInput) MemoKey() string {
	return memoKey("mcp-call", in.Transcript, strconv.Itoa(in.Position), in.CallID)
}

// mcpCallMemo is a call's result, kept before it is appended.
type mcpCallMemo struct {
	Tool    string `json:"tool"`
	Text    string `json:"text"`
	IsError bool   `json:"isError,omitempty"`
}

// MCPCall calls an MCP server's tool for the model. The result is
// memoized before it is appended, so a retry after a crash appends the
// kept result and never calls the server again.
func (a *Activities) MCPCall(ctx context.Context, in MCPCallInput) (MCPCallOutput, error) {
	msgs, err := a.conversationTo(ctx, in.Transcript, in.Position)
	if err != nil {
		return MCPCallOutput{}, err
	}
	key := in.MemoKey()
	m, found, err := readMemo[mcpCallMemo](ctx, a.Store, key)
	if err != nil {
		return MCPCallOutput{}, err
	}
	if found {
		activity.GetLogger(ctx).Info("MCP call reused from an earlier try", "transcript", in.Transcript, "position", in.Position, "call", in.CallID)
	} else {
		if in.Position < len(msgs) {
			return MCPCallOutput{}, badInput("transcript %s: position %d already holds a message, and no outcome of call %s was kept", in.Transcript, in.Position, in.CallID)
		}
		calls, err := pickCalls(RunToolsInput{Transcript: in.Transcript, Position: in.Position, CallIDs: []string{in.CallID}}, msgs)
		if err != nil {
			return MCPCallOutput{}, err
		}
		m = a.mcpCall(ctx, calls[0])
		raw, err := json.Marshal(m)
		if err != nil {
			return MCPCallOutput{}, fmt.Errorf("encode memo: %w", err)
		}
		// Without the memo a retry would call the server again: that is
		// worse than failing now.
		if err := a.putMemo(ctx, key, raw); err != nil {
			return MCPCallOutput{}, fmt.Errorf("store the call's outcome: %w", err)
		}
	}
	msg := llm.Message{Role: llm.RoleTool, Result: &llm.ToolResult{CallID: in.CallID, Name: m.Tool, Content: m.Text, IsError: m.IsError}}
	if err := a.appendMessages(ctx, in.Transcript, in.Position, msg); err != nil {
		return MCPCallOutput{}, err
	}
	return MCPCallOutput{Length: in.Position + 1, IsError: m.IsError, Bytes: len(m.Text)}, nil
}

// mcpCallTimeout bounds one call, within MCPCall's own timeout: a call
// that takes longer is a tool error the model reads, kept like any
// result, rather than an activity retried into calling the server again.
const mcpCallTimeout = 2 * time.Minute

func (a *Activities) mcpCall(ctx context.Context, c llm.ToolCall) mcpCallMemo {
	m := mcpCallMemo{Tool: c.Name, IsError: true}
	switch {
	case c.Problem != "":
		m.Text = c.Problem
	case a.MCP == nil:
		m.Text = "no MCP servers are configured on this worker; use the other tools"
	default:
		stop := heartbeatWhile(ctx, ModelCall{Since: time.Now()})
		callCtx, cancel := context.WithTimeout(ctx, mcpCallTimeout)
		res := a.MCP.Call(callCtx, c.Name, json.RawMessage(c.Arguments))
		cancel()
		stop()
		m.Text, m.IsError = res.Text, res.IsError
	}
	return m
}

// readMemo reads and decodes the memo at key, if there is one.
func readMemo[T any](ctx context.Context, st store.Store, key string) (T, bool, error) {
	var v T
	raw, err := st.GetMemo(ctx, key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return v, false, nil
	case err != nil:
		return v, false, fmt.Errorf("read memo: %w", err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("decode memo %s: %w", key, err)
	}
	return v, true, nil
}
