// Command lookupserver is an MCP server over stdio for tests:
//
//	lookupserver LOGFILE [GATE]
//
// Its tools: lookup (appends a line to LOGFILE, then answers; with GATE,
// only once the file GATE exists, so a test can act while the call is
// logged but not yet answered), environ (its environment and working
// directory), fail (an error result) and grow (adds the tool extra, which
// tells the connected clients that the tools changed).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type lookupArgs struct {
	Query string `json:"query" jsonschema:"what to look up"`
}

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		log.Fatal("usage: lookupserver LOGFILE [GATE]")
	}
	logPath, gate := os.Args[1], ""
	if len(os.Args) == 3 {
		gate = os.Args[2]
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "lookupserver", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "Looks a word up in the docs."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in lookupArgs) (*mcp.CallToolResult, any, error) {
			f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				return nil, nil, err
			}
			_, err = fmt.Fprintf(f, "lookup %s\n", in.Query)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, err
			}
			if err := waitFor(ctx, gate); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "docs for " + in.Query + ": use \x1b[31mstrings.Fields\x1b[0m"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "environ", Description: "Its environment."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cwd=" + wd + "\n" + strings.Join(os.Environ(), "\n")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such page"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds the tool extra."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "Added by grow."},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "extra"}}}, nil, nil
				})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "grew"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// waitFor returns once the file at path exists (at once for no path), or
// when ctx ends.
func waitFor(ctx context.Context, path string) error {
	for path != "" {
		_, err := os.Stat(path)
		if err == nil {
			return nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("gate: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
