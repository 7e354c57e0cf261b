package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/autocoder/autocoder/internal/mcptools"
	"github.com/autocoder/autocoder/internal/mcptools/mcptest"
)

func TestPoolOffersAllowedToolsAndCallsThem(t *testing.T) {
	bin := mcptest.LookupServer(t)
	logPath := filepath.Join(t.TempDir(), "calls.log")
	t.Setenv("AUTOCODER_TEST_LEAK", "secret") // the worker's own environment must not reach the server
	pool := mcptools.NewPool([]mcptools.Server{{
		Name: "docs", Command: bin, Args: []string{logPath}, Env: []string{"GIVEN=yes"},
		Tools: []string{"lookup", "environ", "fail"},
	}}, nil)
	defer pool.Close()
	ctx := context.Background()

	var names []string
	for _, tool := range pool.Tools(ctx) {
		names = append(names, tool.Name)
		if !json.Valid(tool.Schema) {
			t.Errorf("%s: schema %s", tool.Name, tool.Schema)
		}
	}
	if got := strings.Join(names, " "); got != "mcp__docs__environ mcp__docs__fail mcp__docs__lookup" {
		t.Fatalf("offered %q", got)
	}

	res := pool.Call(ctx, "mcp__docs__lookup", json.RawMessage(`{"query":"split"}`))
	if res.IsError || !strings.HasPrefix(res.Text, "docs for split") || strings.Contains(res.Text, "\x1b") {
		t.Errorf("lookup: %+v (want its text, the escape made visible)", res)
	}
	if n := mcptest.Calls(t, logPath); n != 1 {
		t.Errorf("the server logged %d calls, want 1", n)
	}

	env := pool.Call(ctx, "mcp__docs__environ", nil)
	if !strings.Contains(env.Text, "GIVEN=yes") || strings.Contains(env.Text, "AUTOCODER_TEST_LEAK") || !strings.Contains(env.Text, "cwd=/\n") {
		t.Errorf("the server's environment: %s", env.Text)
	}
	if res := pool.Call(ctx, "mcp__docs__fail", nil); !res.IsError || res.Text != "no such page" {
		t.Errorf("fail: %+v, want the server's error result", res)
	}
}

func TestPoolRefusesWhatIsNotAllowed(t *testing.T) {
	bin := mcptest.LookupServer(t)
	logPath := filepath.Join(t.TempDir(), "calls.log")
	pool := mcptools.NewPool([]mcptools.Server{
		{Name: "docs", Command: bin, Args: []string{logPath}, Tools: []string{"environ"}},
		{Name: "none", Command: bin, Args: []string{logPath}}, // no tools listed: none offered
	}, nil)
	defer pool.Close()
	ctx := context.Background()
	if tools := pool.Tools(ctx); len(tools) != 1 || tools[0].Name != "mcp__docs__environ" {
		t.Fatalf("offered %+v, want only mcp__docs__environ", tools)
	}
	for _, name := range []string{"mcp__docs__lookup", "mcp__none__lookup", "mcp__other__lookup", "mcp__docs"} {
		res := pool.Call(ctx, name, json.RawMessage(`{"query":"x"}`))
		if !res.IsError {
			t.Errorf("%s: %+v, want a tool error", name, res)
		}
	}
	if n := mcptest.Calls(t, logPath); n != 0 {
		t.Errorf("the server logged %d calls of refused tools", n)
	}
}

func TestPoolDeadServerIsAToolErrorAndIsStartedAgain(t *testing.T) {
	bin := mcptest.LookupServer(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "calls.log")
	moved := filepath.Join(dir, "gone")
	pool := mcptools.NewPool([]mcptools.Server{{Name: "docs", Command: moved, Args: []string{logPath}, Tools: []string{"*"}}}, nil)
	defer pool.Close()
	ctx := context.Background()
	if tools := pool.Tools(ctx); len(tools) != 0 {
		t.Fatalf("a server that does not start offered %v", tools)
	}
	res := pool.Call(ctx, "mcp__docs__lookup", json.RawMessage(`{"query":"x"}`))
	if !res.IsError || !strings.Contains(res.Text, "could not be reached") {
		t.Fatalf("call to a dead server: %+v", res)
	}
	if err := os.Rename(bin, moved); err != nil {
		t.Fatal(err)
	}
	if res := pool.Call(ctx, "mcp__docs__lookup", json.RawMessage(`{"query":"x"}`)); res.IsError {
		t.Fatalf("after the server came back: %+v", res)
	}
	if n := mcptest.Calls(t, logPath); n != 1 {
		t.Errorf("calls logged: %d, want 1", n)
	}
}

// A server over streamable HTTP gets the configured headers on each
// request; its text result comes back capped at MaxOutputBytes.
func TestPoolOverHTTPSendsHeaders(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "The caller."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			text := "auth=" + req.Extra.Header.Get("Authorization") + "\n" + strings.Repeat("x", 2*mcptools.MaxOutputBytes)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	defer srv.Close()
	pool := mcptools.NewPool([]mcptools.Server{{Name: "tracker", URL: srv.URL, Headers: map[string]string{"Authorization": "Bearer t0k"}, Tools: []string{"*"}}}, nil)
	defer pool.Close()
	res := pool.Call(context.Background(), "mcp__tracker__whoami", nil)
	if res.IsError || !strings.HasPrefix(res.Text, "auth=Bearer t0k\n") || len(res.Text) > mcptools.MaxOutputBytes+100 || !strings.Contains(res.Text, "[output cut at") {
		t.Errorf("whoami over HTTP: error %v, %d bytes: %.80q", res.IsError, len(res.Text), res.Text)
	}
}

// TestPoolListsToolsAgainWhenTheyChange: a server that says its tools
// changed (notifications/tools/list_changed) has them listed again; until
// then the listing is kept. A command server says it on its stdout, a URL
// server on the session's standalone stream.
func TestPoolListsToolsAgainWhenTheyChange(t *testing.T) {
	t.Run("command", func(t *testing.T) {
		bin := mcptest.LookupServer(t)
		listsAgain(t, mcptools.Server{Name: "docs", Command: bin, Args: []string{filepath.Join(t.TempDir(), "calls.log")}, Tools: []string{mcptools.AllTools}})
	})
	t.Run("url", func(t *testing.T) {
		s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
		text := func(v string) *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: v}}}
		}
		mcp.AddTool(s, &mcp.Tool{Name: "grow", Description: "Adds the tool extra."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				mcp.AddTool(s, &mcp.Tool{Name: "extra", Description: "Added by grow."},
					func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
						return text("extra"), nil, nil
					})
				return text("grown"), nil, nil
			})
		srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		defer srv.Close()
		listsAgain(t, mcptools.Server{Name: "docs", URL: srv.URL, Tools: []string{mcptools.AllTools}})
	})
}

// listsAgain checks that the server's tools, grow and then extra once
// grow has run, are offered as they change.
func listsAgain(t *testing.T, server mcptools.Server) {
	pool := mcptools.NewPool([]mcptools.Server{server}, nil)
	defer pool.Close()
	ctx := context.Background()
	offered := func() []string {
		var names []string
		for _, tool := range pool.Tools(ctx) {
			names = append(names, tool.Name)
		}
		return names
	}
	if names := offered(); slices.Contains(names, "mcp__docs__extra") || !slices.Contains(names, "mcp__docs__grow") {
		t.Fatalf("offered %v before grow", names)
	}
	if res := pool.Call(ctx, "mcp__docs__grow", nil); res.IsError {
		t.Fatalf("grow: %+v", res)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(offered(), "mcp__docs__extra") {
		if time.Now().After(deadline) {
			t.Fatalf("still offered %v 10 s after the server's tools changed", offered())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := pool.Call(ctx, "mcp__docs__extra", nil); res.IsError || res.Text != "extra" {
		t.Errorf("extra: %+v", res)
	}
}

// TestPoolOverHTTPWithOAuth: a server that wants OAuth answers 401 with
// its protected resource metadata; the pool finds its authorization
// server's token endpoint, gets a token with the client credentials grant
// (the secret never reaches the MCP server), calls the tool with it, and
// keeps it for the next call, and gets another once it expires. An
// authorization server other than the one named, or a wrong secret, is a
// tool error that says what failed.
func TestPoolOverHTTPWithOAuth(t *testing.T) {
	var issued, expiresIn atomic.Int32
	expiresIn.Store(3600)
	var tokens sync.Map
	as := httptest.NewServer(nil)
	defer as.Close()
	as.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token",
				"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}, "response_types_supported": []string{"code"},
				"code_challenge_methods_supported": []string{"S256"}})
		case "/token":
			id, secret, ok := r.BasicAuth()
			if !ok || id != "autocoder-ci" || secret != "s3cret" || r.FormValue("grant_type") != "client_credentials" {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":"invalid_client"}`)
				return
			}
			tok := fmt.Sprintf("tok-%d", issued.Add(1))
			tokens.Store(tok, true)
			json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": expiresIn.Load()})
		default:
			http.NotFound(w, r)
		}
	})
	s := mcp.NewServer(&mcp.Implementation{Name: "tracker", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "The caller."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "auth=" + req.Extra.Header.Get("Authorization")}}}, nil, nil
		})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var sawSecret atomic.Bool
	verify := func(_ context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		if _, ok := tokens.Load(token); !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mcpHandler := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: srv.URL + "/.well-known/oauth-protected-resource"})(
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), "s3cret") {
			sawSecret.Store(true)
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	mux.Handle("/.well-known/oauth-protected-resource", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: srv.URL + "/mcp", AuthorizationServers: []string{as.URL}}))

	pool := mcptools.NewPool([]mcptools.Server{{Name: "tracker", URL: srv.URL + "/mcp", Tools: []string{"*"},
		OAuth: &mcptools.OAuthClient{ClientID: "autocoder-ci", ClientSecret: "s3cret"}}}, nil)
	defer pool.Close()
	for range 2 {
		res := pool.Call(context.Background(), "mcp__tracker__whoami", nil)
		if res.IsError || res.Text != "auth=Bearer tok-1" {
			t.Errorf("whoami with OAuth: %+v", res)
		}
	}
	if n := issued.Load(); n != 1 || sawSecret.Load() {
		t.Errorf("%d tokens issued (want 1, kept for the second call); the MCP server saw the secret: %v", n, sawSecret.Load())
	}

	// Tokens that expire at once: each call gets a new one, after the
	// call that set the source up has ended.
	expiresIn.Store(1)
	short := mcptools.NewPool([]mcptools.Server{{Name: "tracker", URL: srv.URL + "/mcp", Tools: []string{"*"},
		OAuth: &mcptools.OAuthClient{ClientID: "autocoder-ci", ClientSecret: "s3cret", Issuer: as.URL}}}, nil)
	defer short.Close()
	before := issued.Load()
	for i := range 3 {
		if res := short.Call(context.Background(), "mcp__tracker__whoami", nil); res.IsError {
			t.Errorf("call %d with tokens that expire: %+v", i, res)
		}
	}
	if n := issued.Load() - before; n < 3 {
		t.Errorf("%d tokens issued for 3 calls with tokens that expire at once", n)
	}

	// An issuer that is not the one named: the secret is not sent.
	before = issued.Load()
	other := mcptools.NewPool([]mcptools.Server{{Name: "tracker", URL: srv.URL + "/mcp", Tools: []string{"*"},
		OAuth: &mcptools.OAuthClient{ClientID: "autocoder-ci", ClientSecret: "s3cret", Issuer: "https://login.example"}}}, nil)
	defer other.Close()
	if res := other.Call(context.Background(), "mcp__tracker__whoami", nil); !res.IsError || !strings.Contains(res.Text, "issuer") || issued.Load() != before {
		t.Errorf("another issuer than the one named: %+v, %d tokens issued", res, issued.Load()-before)
	}

	wrong := mcptools.NewPool([]mcptools.Server{{Name: "tracker", URL: srv.URL + "/mcp", Tools: []string{"*"},
		OAuth: &mcptools.OAuthClient{ClientID: "autocoder-ci", ClientSecret: "wrong"}}}, nil)
	defer wrong.Close()
	if res := wrong.Call(context.Background(), "mcp__tracker__whoami", nil); !res.IsError {
		t.Errorf("a wrong client secret: %+v, want a tool error", res)
	} else {
		t.Logf("a wrong client secret: %s", res.Text)
	}
}

// TestPoolReconfigure: a server whose entry changes is started again as
// configured now, one that stays keeps its session, a removed one is no
// longer called, and a new one is offered.
func TestPoolReconfigure(t *testing.T) {
	bin := mcptest.LookupServer(t)
	dir := t.TempDir()
	docs := mcptools.Server{Name: "docs", Command: bin, Args: []string{filepath.Join(dir, "docs.log")}, Tools: []string{"lookup"}}
	keep := mcptools.Server{Name: "keep", Command: bin, Args: []string{filepath.Join(dir, "keep.log")}, Tools: []string{"environ"}}
	pool := mcptools.NewPool([]mcptools.Server{docs, keep}, nil)
	defer pool.Close()
	ctx := context.Background()
	environ := func(server string) string {
		t.Helper()
		res := pool.Call(ctx, "mcp__"+server+"__environ", nil)
		if res.IsError {
			t.Fatalf("environ of %s: %+v", server, res)
		}
		return res.Text
	}
	names := func() []string {
		var out []string
		for _, tool := range pool.Tools(ctx) {
			out = append(out, tool.Name)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"mcp__docs__lookup", "mcp__keep__environ"}) {
		t.Fatalf("offered %v", got)
	}
	keptBefore := environ("keep")

	changed := docs
	changed.Env = []string{"EDITED=yes"}
	changed.Tools = []string{"lookup", "environ"}
	added := mcptools.Server{Name: "added", Command: bin, Args: []string{filepath.Join(dir, "added.log")}, Tools: []string{"lookup"}}
	pool.Reconfigure([]mcptools.Server{changed, keep, added})
	if got := names(); !slices.Equal(got, []string{"mcp__docs__environ", "mcp__docs__lookup", "mcp__keep__environ", "mcp__added__lookup"}) {
		t.Errorf("offered after the change %v", got)
	}
	if got := environ("docs"); !strings.Contains(got, "EDITED=yes") {
		t.Errorf("the changed server's environment %q: not started again as configured now", got)
	}
	if got := environ("keep"); got != keptBefore {
		t.Errorf("the unchanged server's answer changed: %q, then %q", keptBefore, got)
	}

	// Only the allowed tools change: listed again on the same session.
	narrowed := changed
	narrowed.Tools = []string{"environ"}
	pool.Reconfigure([]mcptools.Server{narrowed, keep})
	if got := names(); !slices.Equal(got, []string{"mcp__docs__environ", "mcp__keep__environ"}) {
		t.Errorf("offered after narrowing docs' tools %v", got)
	}

	pool.Reconfigure([]mcptools.Server{keep})
	if res := pool.Call(ctx, "mcp__docs__lookup", json.RawMessage(`{"query":"x"}`)); !res.IsError || !strings.Contains(res.Text, "no MCP server is configured") {
		t.Errorf("a removed server's tool: %+v", res)
	}
}

// TestPoolWithoutStandingStream: a URL server that takes the standing
// stream's GET and never answers it is used without the stream, within
// moments, not after minutes of retries.
func TestPoolWithoutStandingStream(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "ping", Description: "Pong."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			<-release // a gateway that holds the stream's request
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	defer close(release)
	pool := mcptools.NewPool([]mcptools.Server{{Name: "slow", URL: srv.URL, Tools: []string{"*"}}}, nil)
	defer pool.Close()
	start := time.Now()
	tools := pool.Tools(context.Background())
	res := pool.Call(context.Background(), "mcp__slow__ping", nil)
	if took := time.Since(start); len(tools) != 1 || res.IsError || res.Text != "pong" || took > 15*time.Second {
		t.Errorf("tools %v, ping %+v after %s; want the server used without its stream within moments", tools, res, took.Round(time.Millisecond))
	}
}
