package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/mcptools"
)

// TestMCPServers: [[mcp_servers]] entries become servers, env_from and
// headers_env read from the worker's environment, nothing else of it.
func TestMCPServers(t *testing.T) {
	text := `[[mcp_servers]]
name = "docs"
command = "/usr/bin/docs-server"
args = ["--stdio"]
env = { DOCS_TOKEN = "t0ken" }
env_from = ["HOME"]
cwd = "/srv/docs"
tools = ["lookup"]

[[mcp_servers]]
name = "tracker"
url = "https://tracker.example/mcp"
headers = { "X-Team" = "core" }
headers_env = { Authorization = "TRACKER_AUTH" }
tools = ["*"]
ask = true
`
	p := writeFile(t, t.TempDir(), "c.toml", text, 0o600)
	c, err := Load(Options{File: p, Getenv: envOf(map[string]string{"HOME": "/home/w", "TRACKER_AUTH": "Bearer x", "OTHER": "no"})})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.MCPServers()
	if err != nil {
		t.Fatal(err)
	}
	want := []mcptools.Server{
		{Name: "docs", Command: "/usr/bin/docs-server", Args: []string{"--stdio"}, Env: []string{"HOME=/home/w", "DOCS_TOKEN=t0ken"}, Dir: "/srv/docs", Tools: []string{"lookup"}},
		{Name: "tracker", URL: "https://tracker.example/mcp", Headers: map[string]string{"X-Team": "core", "Authorization": "Bearer x"}, Tools: []string{"*"}, Ask: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MCPServers =\n%+v\nwant\n%+v", got, want)
	}
	shown := c.FileMCPServers()[0].Masked() + " | " + c.FileMCPServers()[1].Masked()
	if strings.Contains(shown, "t0ken") || strings.Contains(shown, "core") || !strings.Contains(shown, "DOCS_TOKEN="+MaskedSecret) {
		t.Errorf("config show would print %q", shown)
	}

	before := c.Fingerprint()["mcp_servers"]
	c, err = Load(Options{File: p, Getenv: envOf(map[string]string{"HOME": "/home/w", "TRACKER_AUTH": "Bearer y"})})
	if err != nil {
		t.Fatal(err)
	}
	if after := c.Fingerprint()["mcp_servers"]; before == "" || after == before || strings.Contains(after, "Bearer") {
		t.Errorf("fingerprint %q, then with another header value %q: want a hash that changes", before, after)
	}

	c, err = Load(Options{File: p, Getenv: envOf(map[string]string{"HOME": "/home/w"})})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MCPServers(); err == nil || !strings.Contains(err.Error(), "TRACKER_AUTH, which is not set") {
		t.Errorf("an unset headers_env: %v", err)
	}
}

func TestMCPServerErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		want       string
	}{
		{"no name", "[[mcp_servers]]\ncommand = \"x\"\n", 1, "needs a name"},
		{"neither", "[[mcp_servers]]\nname = \"a\"\n", 1, "needs a command"},
		{"both", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/\"\n", 1, "one of them"},
		{"bad name", "[[mcp_servers]]\ncommand = \"x\"\nname = \"a__b\"\n", 3, "mcp__<name>__<tool>"},
		{"unknown key", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\ntimeout = 3\n", 4, "unknown key"},
		{"tools not a list", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\ntools = \"lookup\"\n", 4, "want a list of strings"},
		{"relative cwd", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"src\"\n", 4, "absolute path"},
		{"headers for a command", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nheaders_env = { A = \"B\" }\n", 1, "headers, headers_env and oauth_* are for a url"},
		{"oauth for a command", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\noauth_client_id = \"c\"\noauth_client_secret_env = \"S\"\n", 1, "are for a url"},
		{"oauth id alone", "[[mcp_servers]]\nname = \"a\"\nurl = \"https://h/mcp\"\noauth_client_id = \"c\"\n", 1, "go together"},
		{"oauth over http", "[[mcp_servers]]\nname = \"a\"\nurl = \"http://h.example/mcp\"\noauth_client_id = \"c\"\noauth_client_secret_env = \"S\"\n", 1, "over https://"},
		{"oauth and a bearer", "[[mcp_servers]]\nname = \"a\"\nurl = \"https://h/mcp\"\noauth_client_id = \"c\"\noauth_client_secret_env = \"S\"\nheaders_env = { authorization = \"T\" }\n", 1, "keep one of them"},
		{"oauth issuer over http", "[[mcp_servers]]\nname = \"a\"\nurl = \"https://h/mcp\"\noauth_client_id = \"c\"\noauth_client_secret_env = \"S\"\noauth_issuer = \"http://as.example\"\n", 6, "https://"},
		{"oauth secret env bad", "[[mcp_servers]]\nname = \"a\"\nurl = \"https://h/mcp\"\noauth_client_id = \"c\"\noauth_client_secret_env = \"not a name\"\n", 5, "oauth_client_secret_env"},
		{"twice", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\n\n[[mcp_servers]]\nname = \"a\"\ncommand = \"y\"\n", 6, "names another server"},
		{"not a list", "mcp_servers = 3\n", 1, "list of servers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "c.toml", tc.text, 0o600)
			_, err := Load(Options{File: p})
			if err == nil {
				t.Fatal("no error")
			}
			prefix := p + ":" + itoa(tc.line) + ":"
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q… naming %q", err, prefix, tc.want)
			}
		})
	}
	p := writeFile(t, t.TempDir(), "c.toml", "[[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nenv = { T = \"s\" }\n", 0o644)
	if _, err := Load(Options{File: p}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("env in a file others read: %v", err)
	}
}

// TestMCPServerOAuth: an HTTP server's OAuth client takes its secret from
// the variable the file names, shown only by that name.
func TestMCPServerOAuth(t *testing.T) {
	text := "[[mcp_servers]]\nname = \"tracker\"\nurl = \"https://tracker.example/mcp\"\noauth_client_id = \"autocoder\"\noauth_client_secret_env = \"TRACKER_SECRET\"\noauth_issuer = \"https://login.example\"\ntools = [\"*\"]\n"
	p := writeFile(t, t.TempDir(), "c.toml", text, 0o644)
	c, err := Load(Options{File: p, Getenv: envOf(map[string]string{"TRACKER_SECRET": "s3cret"})})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.MCPServers()
	if err != nil || len(got) != 1 || got[0].OAuth == nil || *got[0].OAuth != (mcptools.OAuthClient{ClientID: "autocoder", ClientSecret: "s3cret", Issuer: "https://login.example"}) {
		t.Fatalf("MCPServers = %+v, %v", got, err)
	}
	if shown := c.FileMCPServers()[0].Masked(); strings.Contains(shown, "s3cret") || !strings.Contains(shown, "OAuth client autocoder, its secret from $TRACKER_SECRET") {
		t.Errorf("config show would print %q", shown)
	}
	c, err = Load(Options{File: p, Getenv: envOf(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.MCPServers(); err == nil || !strings.Contains(err.Error(), "TRACKER_SECRET, which is not set") {
		t.Errorf("an unset oauth_client_secret_env: %v", err)
	}
}
