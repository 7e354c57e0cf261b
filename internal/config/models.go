package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/autocoder/autocoder/internal/llm"
)

// provider is a [providers.NAME] section that takes a key.
type provider string

var providers = []provider{"openai", "anthropic", "gemini"}

// keyForms are the ways a provider's key is given; at most one per file.
var keyForms = []string{"api_key", "api_key_env", "api_key_cmd"}

func (p provider) key(form string) string { return "providers." + string(p) + "." + form }

// keyCmdTimeout bounds an api_key_cmd (a password manager may be slow).
const keyCmdTimeout = 30 * time.Second

// ModelEnv is what the model layer needs, with the providers' keys read:
// an api_key_cmd runs here, so call this where the keys are used (the
// worker), never to put a key in a workflow's history.
func (c *Config) ModelEnv(ctx context.Context) (llm.Env, error) {
	e := c.modelEnv()
	var err error
	if e.OpenAIKey, err = c.apiKey(ctx, "openai"); err != nil {
		return llm.Env{}, err
	}
	if e.AnthropicKey, err = c.apiKey(ctx, "anthropic"); err != nil {
		return llm.Env{}, err
	}
	if e.GeminiKey, err = c.apiKey(ctx, "gemini"); err != nil {
		return llm.Env{}, err
	}
	e.GeminiKeyBorrowed = e.GeminiKey != "" && !c.hasKey("gemini")
	return e, nil
}

// DefaultModel is the model a task runs with when it names none. It only
// asks whether each provider has a key, so no api_key_cmd runs.
func (c *Config) DefaultModel() (llm.Spec, error) {
	e := c.modelEnv()
	if c.hasKey("openai") {
		e.OpenAIKey = "set"
	}
	if c.hasKey("anthropic") {
		e.AnthropicKey = "set"
	}
	if c.hasKey("gemini") {
		e.GeminiKey = "set"
	}
	return e.DefaultSpec()
}

// modelEnv is the model layer's settings without the keys.
func (c *Config) modelEnv() llm.Env {
	return llm.Env{
		ModelSpec:        c.String("model"),
		OpenAIBaseURL:    c.String("providers.openai.base_url"),
		AnthropicBaseURL: c.String("providers.anthropic.base_url"),
		GeminiBaseURL:    c.String("providers.gemini.base_url"),
		OllamaHost:       c.String("providers.ollama.host"),
		FirstByteTimeout: c.String("model_call.first_byte_timeout"),
		IdleTimeout:      c.String("model_call.idle_timeout"),
		MaxAnswer:        c.String("model_call.max_answer"),
		BreakerCooldown:  c.String("model_call.breaker_cooldown"),
	}
}

// hasKey reports whether p has a key that makes it the default model.
// GOOGLE_API_KEY does not: many hold it for other Google APIs, and it
// would move them to a paid model unasked. It serves Gemini when named.
func (c *Config) hasKey(p provider) bool {
	for _, form := range keyForms {
		if v := c.Get(p.key(form)); v.Text != "" && (v.Source.Kind != FromEnv || v.Source.Name != llm.EnvGoogleKey) {
			return true
		}
	}
	return false
}

// apiKey reads p's key: the variable (OPENAI_API_KEY) or the file's
// api_key as they are, api_key_env's variable, or api_key_cmd's output.
// The variable overrides whichever form the file uses.
func (c *Config) apiKey(ctx context.Context, p provider) (string, error) {
	if v := c.Get(p.key("api_key")); v.Text != "" {
		return v.Text, nil
	}
	if v := c.Get(p.key("api_key_env")); v.Text != "" {
		key := c.getenv(v.Text)
		if key == "" {
			return "", fmt.Errorf("%s (%s) names %s, which is not set: export it, or change the file", p.key("api_key_env"), v.Source, v.Text)
		}
		return key, nil
	}
	v := c.Get(p.key("api_key_cmd"))
	if v.Text == "" {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, keyCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", v.Text)
	cmd.Dir = filepath.Dir(v.Source.Path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s (%s) failed: %w: %s", p.key("api_key_cmd"), v.Source, err, strings.TrimSpace(stderr.String()))
	}
	key := strings.TrimSpace(string(out))
	if key == "" {
		return "", fmt.Errorf("%s (%s) printed nothing: it must print the key", p.key("api_key_cmd"), v.Source)
	}
	return key, nil
}

// Fingerprint is the settings a local server runs tasks with, by key name,
// for comparing a server's with a client's. A secret is kept as a hash,
// never its value, and so is the variable api_key_env names; an
// api_key_cmd is kept as the command, which only the server runs. Values
// equal to the default are left out, so that unset and default compare equal.
func (c *Config) Fingerprint() map[string]string {
	s := map[string]string{}
	for _, k := range Keys {
		v := c.values[k.Name]
		if !k.Fingerprint || v.Text == "" || v.Text == k.Default {
			continue
		}
		switch {
		case k.Secret:
			s[k.Name] = hash(v.Text)
		case strings.HasSuffix(k.Name, ".api_key_env"):
			s[k.Name] = v.Text + " " + hash(c.getenv(v.Text))
		default:
			s[k.Name] = v.Text
		}
	}
	// The worker runs the MCP servers: a local server started with other
	// ones, or with other values for them, does not fit (secrets hashed).
	if len(c.mcpServers) > 0 {
		var resolved any = c.mcpServers
		if servers, err := c.MCPServers(); err == nil {
			resolved = servers
		}
		if raw, err := json.Marshal(resolved); err == nil {
			s["mcp_servers"] = hash(string(raw))
		}
	}
	// The worker prices its tasks' model calls with the file's prices.
	for _, p := range c.prices {
		s["prices."+p.Model] = p.Shown()
	}
	// The sandbox reads these itself (see TestOnlyConfigReadsTheEnvironment).
	for _, name := range []string{"AUTOCODER_IMAGE_PYTHON", "AUTOCODER_IMAGE_GO"} {
		if v := c.getenv(name); v != "" {
			s[name] = v
		}
	}
	return s
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:8])
}
