// Package mcptools is the MCP client of the tool loop: it connects to the
// servers the user configured ([[mcp_servers]]), lists the tools they
// allow, and calls them for the model. A server runs on the worker's host,
// with only the environment its entry gives it, in its configured working
// directory (the root directory otherwise), never in the sandbox.
package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/autocoder/autocoder/internal/termsafe"
	"github.com/autocoder/autocoder/internal/truncate"
)

// Prefix starts the name the model knows an MCP tool by:
// mcp__<server>__<tool>.
const Prefix = "mcp__"

// AllTools in a server's allow-list offers every tool it lists.
const AllTools = "*"

// Bounds on what a server may put before the model.
const (
	MaxOutputBytes      = 16 << 10 // a call's result
	MaxSchemaBytes      = 8 << 10  // a tool's input schema
	MaxDescriptionBytes = 1 << 10
	MaxTools            = 64 // offered by one server
)

// setupTimeout bounds starting a server and listing its tools: a server
// that hangs there offers nothing, rather than holding up the turn.
const setupTimeout = 20 * time.Second

// Server is one configured server, its secrets resolved.
type Server struct {
	Name string
	// Stdio: the command, its arguments, its whole environment ("K=V")
	// and its working directory.
	Command string
	Args    []string
	Env     []string
	Dir     string
	// Streamable HTTP: the endpoint and the headers every request carries,
	// and the OAuth client the server's authorization server knows, if it
	// asks for one.
	URL     string
	Headers map[string]string
	OAuth   *OAuthClient
	// Tools are the tool names the model may call; AllTools allows every one.
	Tools []string
	// Ask puts each call behind the command-approval gate.
	Ask bool
}

// OAuthClient is a confidential OAuth client of a server's authorization
// server: the worker gets its tokens with the client credentials grant
// (RFC 6749 4.4), finding the token endpoint as the MCP authorization
// spec says (the server's 401, its protected resource metadata, RFC 9728,
// then its authorization server's metadata, RFC 8414), and sends them as
// bearer tokens; a token that expires is fetched again.
type OAuthClient struct {
	ClientID     string
	ClientSecret string
	// Issuer, when set, is the only authorization server the secret is
	// sent to (its metadata must name it).
	Issuer string
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string // mcp__<server>__<tool>
	Description string
	Schema      json.RawMessage
}

// Result is a call's outcome for the model: untrusted text, capped and
// made safe for terminals.
type Result struct {
	Text    string
	IsError bool
}

// Pool holds one session per server, opened on first use and opened again
// after a failure.
type Pool struct {
	log *slog.Logger

	serversMu sync.RWMutex
	servers   []Server // replaced whole by Reconfigure

	mu       sync.Mutex
	sessions map[string]*mcp.ClientSession
	tools    map[string][]Tool // by server, listed once per session

	// changed holds the servers that said their tools changed
	// (notifications/tools/list_changed) since they were listed: their
	// tools are listed again. Its own lock: the notification's handler
	// runs on the session's reader, which a listing under mu waits on.
	changedMu sync.Mutex
	changed   map[string]bool

	// oauth keeps each server's OAuth handler, and with it its token,
	// across sessions (under mu).
	oauth map[string]auth.OAuthHandler
}

// NewPool returns a pool over the servers; it connects to none yet.
func NewPool(servers []Server, log *slog.Logger) *Pool {
	if log == nil {
		log = slog.Default()
	}
	return &Pool{servers: servers, log: log, sessions: map[string]*mcp.ClientSession{}, tools: map[string][]Tool{}, changed: map[string]bool{},
		oauth: map[string]auth.OAuthHandler{}}
}

// ToolName is the name the model calls a server's tool by.
func ToolName(server, tool string) string { return Prefix + server + "__" + tool }

// IsTool reports whether name is an MCP tool's name.
func IsTool(name string) bool { return strings.HasPrefix(name, Prefix) }

// split parses mcp__<server>__<tool>; server names hold no "__".
func split(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "__")
}

func (p *Pool) server(name string) (Server, bool) {
	servers := p.current()
	i := slices.IndexFunc(servers, func(s Server) bool { return s.Name == name })
	if i < 0 {
		return Server{}, false
	}
	return servers[i], true
}

// current are the servers as last configured.
func (p *Pool) current() []Server {
	p.serversMu.RLock()
	defer p.serversMu.RUnlock()
	return p.servers
}

// Reconfigure takes servers in place of the pool's, as a worker's edited
// configuration names them: a server removed, or reached otherwise now,
// loses its session (a call under way on it ends as a tool error) and is
// started anew, as configured now, at its next use; one whose allowed
// tools or ask changed keeps its session and is listed again; the others
// keep theirs.
func (p *Pool) Reconfigure(servers []Server) {
	p.serversMu.Lock()
	old := p.servers
	p.servers = servers
	p.serversMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range old {
		i := slices.IndexFunc(servers, func(s Server) bool { return s.Name == o.Name })
		switch {
		case i >= 0 && reflect.DeepEqual(servers[i], o):
		case i >= 0 && reflect.DeepEqual(connection(servers[i]), connection(o)):
			delete(p.tools, o.Name)
		default:
			p.dropLocked(o.Name)
			delete(p.oauth, o.Name)
		}
	}
}

// connection is what of a server its session is made with.
func connection(s Server) Server {
	s.Tools, s.Ask = nil, false
	return s
}

// Ask reports whether calls to the named tool wait for a person.
func (p *Pool) Ask(name string) bool {
	server, _, ok := split(name)
	s, found := p.server(server)
	return ok && found && s.Ask
}

// Tools lists the allowed tools of every server. A server that cannot be
// reached is logged and offers nothing this time; the rest still do.
func (p *Pool) Tools(ctx context.Context) []Tool {
	var out []Tool
	for _, s := range p.current() {
		tools, err := p.serverTools(ctx, s)
		if err != nil {
			p.log.Warn("mcp server's tools not offered", "server", s.Name, "error", err)
			continue
		}
		out = append(out, tools...)
	}
	return out
}

func (p *Pool) serverTools(ctx context.Context, s Server) ([]Tool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.server(s.Name) // as configured now (Reconfigure)
	if !ok {
		return nil, errors.New("the server is no longer configured")
	}
	p.changedMu.Lock()
	changed := p.changed[s.Name]
	delete(p.changed, s.Name)
	p.changedMu.Unlock()
	if t, ok := p.tools[s.Name]; ok && !changed {
		return t, nil
	}
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	cs, err := p.sessionLocked(ctx, s)
	if err != nil {
		return nil, err
	}
	var tools []Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			p.dropLocked(s.Name)
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if !allowed(s, t.Name) {
			continue
		}
		tool, err := offer(s.Name, t)
		if err != nil {
			p.log.Warn("mcp tool not offered", "server", s.Name, "tool", t.Name, "error", err)
			continue
		}
		if len(tools) == MaxTools {
			p.log.Warn("mcp server lists too many tools; the rest are not offered", "server", s.Name, "max", MaxTools)
			break
		}
		tools = append(tools, tool)
	}
	p.tools[s.Name] = tools
	return tools, nil
}

func allowed(s Server, tool string) bool {
	return slices.Contains(s.Tools, AllTools) || slices.Contains(s.Tools, tool)
}

// offer checks a listed tool: a name the model's API takes, a bounded
// schema.
func offer(server string, t *mcp.Tool) (Tool, error) {
	if !validName(t.Name) {
		return Tool{}, fmt.Errorf("name %q: only letters, digits, _ and - are offered", termsafe.Clip(t.Name, 80))
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return Tool{}, fmt.Errorf("encode schema: %w", err)
	}
	if t.InputSchema == nil {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	if len(schema) > MaxSchemaBytes {
		return Tool{}, fmt.Errorf("input schema of %d bytes, over %d", len(schema), MaxSchemaBytes)
	}
	return Tool{Name: ToolName(server, t.Name), Description: termsafe.Clip(t.Description, MaxDescriptionBytes), Schema: schema}, nil
}

// validName is a name that joins into one the model's APIs accept (at
// most 64 of [A-Za-z0-9_-]) and splits back into server and tool.
func validName(s string) bool {
	if s == "" || len(s) > 40 || strings.Contains(s, "__") {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

// ValidServerName is the rule for a server's name in the configuration.
func ValidServerName(s string) bool { return validName(s) && len(s) <= 16 }

// Call calls the tool the model named. Every failure is a result for the
// model, never an error: a tool not allowed, a server that cannot be
// reached (its session is dropped, and the next call starts it again) or
// a tool that failed.
func (p *Pool) Call(ctx context.Context, name string, args json.RawMessage) Result {
	server, tool, ok := split(name)
	s, found := p.server(server)
	if !ok || !found {
		return Result{Text: fmt.Sprintf("no MCP server is configured for the tool %q", termsafe.Clip(name, 80)), IsError: true}
	}
	if !allowed(s, tool) {
		return Result{Text: fmt.Sprintf("the tool %q of the MCP server %s is not on its allowed list; use the tools you were offered", termsafe.Clip(tool, 80), s.Name), IsError: true}
	}
	var arguments map[string]any
	if len(args) > 0 {
		if err := json.Unmarshal(args, &arguments); err != nil {
			return Result{Text: "the arguments are not a JSON object: " + err.Error(), IsError: true}
		}
	}
	p.mu.Lock()
	setup, cancel := context.WithTimeout(ctx, setupTimeout)
	cs, err := p.sessionLocked(setup, s)
	cancel()
	p.mu.Unlock()
	if err != nil {
		return Result{Text: fmt.Sprintf("the MCP server %s could not be reached: %v", s.Name, err), IsError: true}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		if ctx.Err() == nil {
			p.mu.Lock()
			if p.sessions[s.Name] == cs {
				p.dropLocked(s.Name)
			}
			p.mu.Unlock()
		}
		return Result{Text: fmt.Sprintf("the MCP server %s failed: %v", s.Name, err), IsError: true}
	}
	return Result{Text: resultText(res), IsError: res.IsError}
}

// resultText joins a result's content as text the model reads, capped.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[an image, %s, %d bytes, not shown]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio, %s, %d bytes, not shown]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else {
				b.WriteString("[an embedded resource, not shown]")
			}
		}
		b.WriteByte('\n')
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if raw, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(raw)
		}
	}
	text := termsafe.Text(strings.TrimSuffix(b.String(), "\n"))
	if head := truncate.Head(text, MaxOutputBytes); len(head) < len(text) {
		return head + fmt.Sprintf("\n[output cut at %d of %d bytes]", len(head), len(text))
	}
	return text
}

// oauthHandler is the server's OAuth client credentials handler, made at
// its first session and kept for the next ones. It reaches the metadata
// and the token endpoint with a client of its own: the server's headers
// are for the server.
func (p *Pool) oauthHandler(s Server) (auth.OAuthHandler, error) {
	if h, ok := p.oauth[s.Name]; ok {
		return h, nil
	}
	h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
		Credentials: &oauthex.ClientCredentials{ClientID: s.OAuth.ClientID, ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: s.OAuth.ClientSecret},
			Issuer: s.OAuth.Issuer},
		HTTPClient: &http.Client{Timeout: time.Minute},
	})
	if err != nil {
		return nil, fmt.Errorf("oauth client of %s: %w", s.Name, err)
	}
	o := &oauthClient{h: h}
	p.oauth[s.Name] = o
	return o, nil
}

// sessionLocked returns the server's session, connecting when there is
// none; ctx bounds the handshake, and the session outlives it: it is the
// worker's, not the call's.
func (p *Pool) sessionLocked(ctx context.Context, s Server) (*mcp.ClientSession, error) {
	if cs, ok := p.sessions[s.Name]; ok {
		return cs, nil
	}
	// As configured now: a Reconfigure since the caller looked it up
	// has dropped the session, and must not see one made the old way.
	s, ok := p.server(s.Name)
	if !ok {
		return nil, errors.New("the server is no longer configured")
	}
	var transport mcp.Transport
	if s.URL != "" {
		hc := &http.Client{Transport: headers{s.Headers}}
		t := &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}
		if s.OAuth != nil {
			h, err := p.oauthHandler(s)
			if err != nil {
				return nil, err
			}
			t.OAuthHandler = h
		}
		transport = t
	} else {
		cmd := exec.Command(s.Command, s.Args...)
		cmd.Env = append([]string{}, s.Env...) // never nil: nil would hand it the worker's environment
		cmd.Dir = s.Dir
		if cmd.Dir == "" {
			cmd.Dir = "/"
		}
		transport = &mcp.CommandTransport{Command: cmd}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "autocoder", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			p.changedMu.Lock()
			p.changed[s.Name] = true
			p.changedMu.Unlock()
			p.log.Info("mcp server's tools changed; listed again for the next turn", "server", s.Name)
		},
	})
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	p.sessions[s.Name] = cs
	// A session that ends on its own (a process that exits, a stream a
	// proxy keeps closing) is dropped at once, so the next call starts a
	// new one rather than failing on it.
	go func() {
		_ = cs.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.sessions[s.Name] == cs {
			delete(p.sessions, s.Name)
			delete(p.tools, s.Name)
		}
	}()
	return cs, nil
}

func (p *Pool) dropLocked(server string) {
	if cs, ok := p.sessions[server]; ok {
		_ = cs.Close() // the session failed already; its close error says nothing new
	}
	delete(p.sessions, server)
	delete(p.tools, server)
}

// Close ends every session, stopping the servers' processes.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for name, cs := range p.sessions {
		if err := cs.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", name, err))
		}
		delete(p.sessions, name)
	}
	return errors.Join(errs...)
}

// headers adds the configured headers to each request.
type headers struct{ h map[string]string }

// standingStream is the transport of the session's standing event stream
// (a GET without Last-Event-ID), which the SDK opens while it connects:
// it must answer within standingStreamTimeout.
var standingStream = func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = standingStreamTimeout
	return t
}()

// standingStreamTimeout bounds the standing stream's answer.
const standingStreamTimeout = 5 * time.Second

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	if r.Method != http.MethodGet || r.Header.Get("Last-Event-ID") != "" {
		return http.DefaultTransport.RoundTrip(r)
	}
	resp, err := standingStream.RoundTrip(r)
	if err != nil && r.Context().Err() == nil {
		// A server (or a gateway before it) that takes the GET and does
		// not answer: as one that offers no stream (405, the spec's
		// answer), the session goes on without it, not failed.
		return &http.Response{StatusCode: http.StatusMethodNotAllowed, Status: "405 Method Not Allowed", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	}
	return resp, err
}

// oauthClient makes the SDK's client credentials handler fit a pool that
// its sessions' calls share: one Authorize at a time, and the token
// source it makes fetches later tokens on a context that lives as long
// as the handler (the request's, which it keeps, ends with the call). Its
// HTTP client's timeout bounds each fetch.
type oauthClient struct {
	mu sync.Mutex
	h  auth.OAuthHandler
}

func (o *oauthClient) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.h.TokenSource(ctx)
}

func (o *oauthClient) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.h.Authorize(context.WithoutCancel(ctx), req, resp)
}
