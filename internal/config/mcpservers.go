package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/mcptools"
)

// MCPServer is one [[mcp_servers]] entry of the file: a server whose tools
// the model may call, run by the worker over stdio (Command) or reached
// over streamable HTTP (URL).
type MCPServer struct {
	Name       string
	Command    string
	Args       []string
	Env        map[string]string // values given to the server, secrets maybe
	EnvFrom    []string          // the worker's variables passed through
	Cwd        string
	URL        string
	Headers    map[string]string // secrets maybe
	HeadersEnv map[string]string // header → the variable holding its value
	// OAuth client credentials (a URL server's): the client id, and the
	// variable holding its secret, never the secret.
	OAuthClientID        string
	OAuthClientSecretEnv string
	OAuthIssuer          string // the only authorization server the secret may go to
	// Tools are the tools the model may call; none unless listed ("*":
	// every tool the server lists).
	Tools  []string
	Ask    bool
	Source Source // the entry's [[mcp_servers]] line
}

var mcpServerKeys = []string{"name", "command", "args", "env", "env_from", "cwd", "url", "headers", "headers_env",
	"oauth_client_id", "oauth_client_secret_env", "oauth_issuer", "tools", "ask"}

// readMCPServers reads the mcp_servers array of tables.
func (r *fileReader) readMCPServers(v any) {
	r.eachEntry("mcp_servers", v, "servers: write each as a [[mcp_servers]] table with a name and a command or url",
		"MCP server is a table ([[mcp_servers]] with name = \"...\")",
		func(prefix string, table map[string]any) {
			s, ok := r.mcpServer(prefix, table)
			if !ok {
				return
			}
			if slices.ContainsFunc(r.mcpServers, func(o MCPServer) bool { return o.Name == s.Name }) {
				r.fail(prefix+".name", "[[mcp_servers]] name: %q names another server too; names are unique", s.Name)
				return
			}
			r.mcpServers = append(r.mcpServers, s)
		})
}

// mcpServer reads one entry; a mistake is reported at its key's line.
func (r *fileReader) mcpServer(prefix string, table map[string]any) (MCPServer, bool) {
	s := MCPServer{Source: Source{Kind: FromFile, Path: r.path, Line: r.line(prefix)}}
	ok := true
	bad := func(key, format string, args ...any) {
		r.fail(prefix+"."+key, "[[mcp_servers]] "+key+": "+format, args...)
		ok = false
	}
	for key, v := range table {
		fail := func(format string, args ...any) { bad(key, format, args...) }
		switch key {
		case "name":
			s.Name = stringValue(v, fail)
			if s.Name != "" && !mcptools.ValidServerName(s.Name) {
				fail("%q: use up to 16 letters, digits, - and single _ (the model calls its tools mcp__<name>__<tool>)", s.Name)
			}
		case "command":
			s.Command = stringValue(v, fail)
		case "oauth_client_id":
			s.OAuthClientID = stringValue(v, fail)
		case "oauth_issuer":
			if s.OAuthIssuer = stringValue(v, fail); s.OAuthIssuer != "" && !secureURL(s.OAuthIssuer) {
				fail("want an https:// URL (http:// only to the loopback)")
			}
		case "oauth_client_secret_env":
			if s.OAuthClientSecretEnv = stringValue(v, fail); s.OAuthClientSecretEnv != "" {
				if err := checkEnvName(s.OAuthClientSecretEnv); err != nil {
					fail("%v", err)
				}
			}
		case "cwd":
			if s.Cwd = stringValue(v, fail); s.Cwd != "" && !filepath.IsAbs(s.Cwd) {
				fail("%q: write an absolute path", s.Cwd)
			}
		case "url":
			s.URL = stringValue(v, fail)
			if u, err := url.Parse(s.URL); s.URL != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
				fail("want an http:// or https:// URL")
			}
		case "args", "env_from", "tools":
			list := stringList(v, fail)
			switch key {
			case "args":
				s.Args = list
			case "env_from":
				for _, n := range list {
					if err := checkEnvName(n); err != nil {
						fail("%v", err)
					}
				}
				s.EnvFrom = list
			case "tools":
				s.Tools = list
			}
		case "env", "headers", "headers_env":
			m := stringTable(v, fail)
			switch key {
			case "env":
				s.Env = m
			case "headers":
				s.Headers = m
			case "headers_env":
				for _, n := range m {
					if err := checkEnvName(n); err != nil {
						fail("%v", err)
					}
				}
				s.HeadersEnv = m
			}
		case "ask":
			b, isBool := v.(bool)
			if !isBool {
				fail("want true or false, not %s", tomlType(v))
			}
			s.Ask = b
		default:
			bad(key, "unknown key; a server takes %s", strings.Join(mcpServerKeys, ", "))
		}
	}
	if !ok {
		return s, false
	}
	switch {
	case s.Name == "":
		r.fail(prefix, "[[mcp_servers]] needs a name")
	case (s.Command == "") == (s.URL == ""):
		r.fail(prefix, "[[mcp_servers]] %s needs a command (a server over stdio) or a url (over HTTP): one of them", s.Name)
	case s.URL != "" && (len(s.Args) > 0 || len(s.Env) > 0 || len(s.EnvFrom) > 0 || s.Cwd != ""):
		r.fail(prefix, "[[mcp_servers]] %s has a url: args, env, env_from and cwd are for a command", s.Name)
	case s.Command != "" && (len(s.Headers) > 0 || len(s.HeadersEnv) > 0 || s.OAuthClientID != "" || s.OAuthClientSecretEnv != ""):
		r.fail(prefix, "[[mcp_servers]] %s has a command: headers, headers_env and oauth_* are for a url", s.Name)
	case (s.OAuthClientID == "") != (s.OAuthClientSecretEnv == "") || (s.OAuthIssuer != "" && s.OAuthClientID == ""):
		r.fail(prefix, "[[mcp_servers]] %s: oauth_client_id and oauth_client_secret_env go together (OAuth client credentials: the id, and the variable holding the secret), and oauth_issuer with them", s.Name)
	case s.OAuthClientID != "" && !secureURL(s.URL):
		r.fail(prefix, "[[mcp_servers]] %s: a server that gets an OAuth client's tokens is reached over https:// (http:// only on the loopback)", s.Name)
	case s.OAuthClientID != "" && (hasHeader(s.Headers, "Authorization") || hasHeader(s.HeadersEnv, "Authorization")):
		r.fail(prefix, "[[mcp_servers]] %s: an Authorization header would replace the OAuth client's tokens: keep one of them", s.Name)
	default:
		return s, true
	}
	return s, false
}

// secureURL is an https:// URL, or an http:// one to the loopback.
func secureURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return u.Scheme == "http" && (host == "localhost" || ip != nil && ip.IsLoopback())
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

func stringValue(v any, fail func(string, ...any)) string {
	s, ok := v.(string)
	if !ok {
		fail("want a string in quotes, not %s", tomlType(v))
	}
	return s
}

func stringList(v any, fail func(string, ...any)) []string {
	items, ok := v.([]any)
	if !ok {
		fail("want a list of strings such as [\"a\", \"b\"], not %s", tomlType(v))
		return nil
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		s, ok := item.(string)
		if !ok {
			fail("want a list of strings, and it holds %s", tomlType(item))
			return nil
		}
		out = append(out, s)
	}
	return out
}

func stringTable(v any, fail func(string, ...any)) map[string]string {
	table, ok := v.(map[string]any)
	if !ok {
		fail("want a table of strings such as { NAME = \"value\" }, not %s", tomlType(v))
		return nil
	}
	out := make(map[string]string, len(table))
	for k, item := range table {
		s, ok := item.(string)
		if !ok {
			fail("%s: want a string in quotes, not %s", k, tomlType(item))
			return nil
		}
		out[k] = s
	}
	return out
}

// hasSecrets says whether the entry writes values that may be secrets
// (env values, headers) in the file.
func (s MCPServer) hasSecrets() bool { return len(s.Env) > 0 || len(s.Headers) > 0 }

// MCPServers are the file's servers with their environment and headers
// resolved for the worker: env_from's and headers_env's variables must be
// set.
func (c *Config) MCPServers() ([]mcptools.Server, error) {
	var out []mcptools.Server
	for _, s := range c.mcpServers {
		m := mcptools.Server{Name: s.Name, Command: s.Command, Args: s.Args, Dir: s.Cwd, URL: s.URL, Tools: s.Tools, Ask: s.Ask}
		for _, name := range s.EnvFrom {
			v := c.getenv(name)
			if v == "" {
				return nil, fmt.Errorf("[[mcp_servers]] %s (%s): env_from names %s, which is not set: export it, or change the file", s.Name, s.Source, name)
			}
			m.Env = append(m.Env, name+"="+v)
		}
		for _, k := range sortedKeys(s.Env) {
			m.Env = append(m.Env, k+"="+s.Env[k])
		}
		if len(s.Headers)+len(s.HeadersEnv) > 0 {
			m.Headers = map[string]string{}
		}
		for k, v := range s.Headers {
			m.Headers[k] = v
		}
		if s.OAuthClientID != "" {
			secret := c.getenv(s.OAuthClientSecretEnv)
			if secret == "" {
				return nil, fmt.Errorf("[[mcp_servers]] %s (%s): oauth_client_secret_env names %s, which is not set: export it, or change the file", s.Name, s.Source, s.OAuthClientSecretEnv)
			}
			m.OAuth = &mcptools.OAuthClient{ClientID: s.OAuthClientID, ClientSecret: secret, Issuer: s.OAuthIssuer}
		}
		for k, name := range s.HeadersEnv {
			v := c.getenv(name)
			if v == "" {
				return nil, fmt.Errorf("[[mcp_servers]] %s (%s): headers_env names %s, which is not set (the %s header): export it, or change the file", s.Name, s.Source, name, k)
			}
			m.Headers[k] = v
		}
		out = append(out, m)
	}
	return out, nil
}

// FileMCPServers are the file's [[mcp_servers]] entries as written.
func (c *Config) FileMCPServers() []MCPServer { return c.mcpServers }

// Masked describes the entry for `config show`: env values and headers
// masked.
func (s MCPServer) Masked() string {
	var parts []string
	if s.URL != "" {
		where := MaskedSecret
		if u, err := url.Parse(s.URL); err == nil {
			where = u.Scheme + "://" + u.Host + u.Path
		}
		parts = append(parts, where)
		for _, k := range sortedKeys(s.Headers) {
			parts = append(parts, "header "+k+": "+MaskedSecret)
		}
		for _, k := range sortedKeys(s.HeadersEnv) {
			parts = append(parts, "header "+k+" from $"+s.HeadersEnv[k])
		}
		if s.OAuthClientID != "" {
			parts = append(parts, "OAuth client "+s.OAuthClientID+", its secret from $"+s.OAuthClientSecretEnv)
			if s.OAuthIssuer != "" {
				parts = append(parts, "issued by "+s.OAuthIssuer)
			}
		}
	} else {
		parts = append(parts, strings.Join(append([]string{s.Command}, s.Args...), " "))
		for _, k := range sortedKeys(s.Env) {
			parts = append(parts, k+"="+MaskedSecret)
		}
		for _, k := range s.EnvFrom {
			parts = append(parts, k+" from the worker")
		}
		if s.Cwd != "" {
			parts = append(parts, "in "+s.Cwd)
		}
	}
	tools := "no tools allowed"
	if len(s.Tools) > 0 {
		tools = "tools " + strings.Join(s.Tools, ", ")
	}
	parts = append(parts, tools)
	if s.Ask {
		parts = append(parts, "each call asks")
	}
	return s.Name + ": " + strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
