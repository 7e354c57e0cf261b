package activities

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/llmtest"
	"github.com/autocoder/autocoder/internal/mcptools"
	"github.com/autocoder/autocoder/internal/mcptools/mcptest"
)

// mcpPool serves the test server's tools as the docs server, lookup
// allowed, and returns the file its calls are logged in.
func mcpPool(t *testing.T, ask bool) (*mcptools.Pool, string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "calls.log")
	pool := mcptools.NewPool([]mcptools.Server{{Name: "docs", Command: mcptest.LookupServer(t), Args: []string{logPath}, Tools: []string{"lookup"}, Ask: ask}}, nil)
	t.Cleanup(func() { pool.Close() })
	return pool, logPath
}

// A model turn offers the allowed MCP tools beside the built-in ones, and
// a call to one that asks is marked so for the approval gate.
func TestModelTurnOffersMCPTools(t *testing.T) {
	e, model, _ := agentEnv(t, protocols[0], func(s seen) llmtest.Reply {
		if !strings.HasSuffix(strings.Join(s.Tools, ","), ",finish,mcp__docs__lookup") {
			return llmtest.Fail("tools offered: %v", s.Tools)
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "mcp__docs__lookup", Arguments: `{"query":"split"}`}}}
	})
	e.acts.MCP, _ = mcpPool(t, true)
	n := start(t, e, "tr")
	out := run[ModelTurnOutput](t, e, e.acts.ModelTurn, ModelTurnInput{Transcript: "tr", Position: n, Tools: ToolSetAgent, Model: model})
	if len(out.Calls) != 1 || out.Calls[0].Name != "mcp__docs__lookup" || !out.Calls[0].Ask {
		t.Fatalf("calls %+v, want the MCP call, asking", out.Calls)
	}
}

// An MCP call's result reaches the transcript made safe; a retry, after
// the append or after a failed one, never calls the server again.
func TestMCPCallRetryDoesNotCallAgain(t *testing.T) {
	e := newEnvAt(t, "")
	pool, logPath := mcpPool(t, false)
	e.acts.MCP = pool
	lookup := `{"query":"split"}`
	n := callTurn(t, e, "tr", llm.ToolCall{ID: "c1", Name: "mcp__docs__lookup", Arguments: lookup},
		llm.ToolCall{ID: "c2", Name: "mcp__docs__lookup", Arguments: lookup}, llm.ToolCall{ID: "c3", Name: "mcp__docs__environ", Arguments: `{}`})
	in := MCPCallInput{Transcript: "tr", Position: n, CallID: "c1"}
	first := run[MCPCallOutput](t, e, e.acts.MCPCall, in)
	again := run[MCPCallOutput](t, e, e.acts.MCPCall, in)
	msgs := e.messages(t, "tr")
	if first != again || first.IsError || len(msgs) != n+1 || !strings.HasPrefix(msgs[n].Result.Content, "docs for split") || strings.Contains(msgs[n].Result.Content, "\x1b") {
		t.Fatalf("first %+v, retry %+v, transcript %+v", first, again, msgs[n:])
	}

	e.acts.Store = &faultyStore{Store: e.acts.Store, failAppends: 1}
	in.Position, in.CallID = n+1, "c2"
	if _, err := e.tenv.ExecuteActivity(e.acts.MCPCall, in); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("first try: %v", err)
	}
	run[MCPCallOutput](t, e, e.acts.MCPCall, in)
	if got := mcptest.Calls(t, logPath); got != 2 {
		t.Errorf("the server ran lookup %d times for 2 calls, each tried twice", got)
	}

	// A tool not on the allow-list is a tool error for the model.
	in.Position, in.CallID = n+2, "c3"
	if out := run[MCPCallOutput](t, e, e.acts.MCPCall, in); !out.IsError {
		t.Errorf("a refused tool: %+v", out)
	}
	if r := e.messages(t, "tr")[n+2].Result; !r.IsError || !strings.Contains(r.Content, "not on its allowed list") {
		t.Errorf("a refused tool's result: %+v", r)
	}
}
