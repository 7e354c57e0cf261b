package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
	"github.com/autocoder/autocoder/internal/mcptools"
	"github.com/autocoder/autocoder/internal/mcptools/mcptest"
)

// BenchmarkMCPCall compares a lookup made directly over the pool's session
// with the same call through the MCPCall activity (transcript read, memo
// written, result appended), on SQLite.
//
//	go test -run '^$' -bench MCPCall ./activities/
func BenchmarkMCPCall(b *testing.B) {
	e := newEnvAt(b, "")
	pool := mcptools.NewPool([]mcptools.Server{{Name: "docs", Command: mcptest.LookupServer(b), Args: []string{filepath.Join(b.TempDir(), "calls.log")}, Tools: []string{"lookup"}}}, nil)
	b.Cleanup(func() { pool.Close() })
	e.acts.MCP = pool
	ctx := context.Background()
	args := json.RawMessage(`{"query":"split"}`)
	if res := pool.Call(ctx, "mcp__docs__lookup", args); res.IsError {
		b.Fatal(res.Text)
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if res := pool.Call(ctx, "mcp__docs__lookup", args); res.IsError {
				b.Fatal(res.Text)
			}
		}
	})
	b.Run("activity", func(b *testing.B) {
		n := 0
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			tr := fmt.Sprint("tr", i)
			val, err := e.tenv.ExecuteActivity(e.acts.AppendMessages, AppendMessagesInput{Transcript: tr, Messages: []llm.Message{
				{Role: llm.RoleUser, Text: "look it up"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "mcp__docs__lookup", Arguments: string(args)}}},
			}})
			if err == nil {
				err = val.Get(&n)
			}
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := e.tenv.ExecuteActivity(e.acts.MCPCall, MCPCallInput{Transcript: tr, Position: n, CallID: "c1"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
