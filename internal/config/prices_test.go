package config

import (
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
)

// TestPricesAndFallback: [prices."provider:model"] overrides and adds to
// the list prices, the fallback chain is a list, and mistakes name the
// line.
func TestPricesAndFallback(t *testing.T) {
	text := "model = \"openai:gpt-4.1\"\nfallback = [\"anthropic:claude-sonnet-4-5\", \"ollama:qwen2.5-coder:7b\"]\n\n" +
		"[model_call]\nbreaker_cooldown = \"30s\"\n\n" +
		"[prices.\"openai:gpt-4.1\"]\ninput = 1\noutput = 4.5\n\n[prices.\"ollama:qwen2.5-coder:7b\"]\ninput = 0\noutput = 0\n\n" +
		"[prices.\"anthropic:claude-next\"]\ninput = 2\noutput = 10\ncache_write = 2\n"
	p := writeFile(t, t.TempDir(), "c.toml", text, 0o600)
	c, err := Load(Options{File: p})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.List("fallback"); len(got) != 2 || got[1] != "ollama:qwen2.5-coder:7b" {
		t.Errorf("fallback = %q", got)
	}
	if env := c.modelEnv(); env.BreakerCooldown != "30s" {
		t.Errorf("breaker cooldown = %q, want 30s", env.BreakerCooldown)
	}
	prices := c.Prices()
	gpt := llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4.1"}
	if pr, ok := prices.Of(gpt); !ok || pr.InputPerMTok != 1 || pr.OutputPerMTok != 4.5 {
		t.Errorf("the file's price of gpt-4.1 = %+v, %v", pr, ok)
	}
	if got := prices.Cost(gpt, llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}); got != 5.5 {
		t.Errorf("cost of a million tokens each way = %v, want 5.5", got)
	}
	// Without cached_input, gpt-4.1's cache reads keep its list ratio to
	// input (a quarter); an Anthropic model without a list price takes
	// Anthropic's documented tenth, and its cache_write is as given.
	if pr, _ := prices.Of(gpt); pr.CachedInputPerMTok != 0.25 || pr.CacheWritePerMTok != 1 {
		t.Errorf("gpt-4.1's cache prices = %+v, want 0.25 read, 1 write", pr)
	}
	if pr, _ := prices.Of(llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-next"}); pr.CachedInputPerMTok != 0.2 || pr.CacheWritePerMTok != 2 {
		t.Errorf("claude-next's cache prices = %+v, want 0.2 read, 2 write", pr)
	}
	local := llm.Spec{Provider: llm.ProviderOllama, Model: "qwen2.5-coder:7b"}
	if _, ok := prices.Of(local); !ok {
		t.Error("a local model priced at 0 in the file is still unpriced")
	}
	if pr, ok := prices.Of(llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-sonnet-4-5"}); !ok || pr.InputPerMTok != 3 {
		t.Errorf("a model the file does not price keeps its list price: %+v, %v", pr, ok)
	}
	if got := c.FilePrices(); len(got) != 3 || got[2].Source.Line != 7 {
		t.Errorf("file prices = %+v, want the second from line 7", got)
	}

	if _, err := Load(Options{Flags: map[string]Value{"fallback": {Text: "openai:gpt-4.1,mistral:large"}}}); err == nil || !strings.Contains(err.Error(), "--fallback") {
		t.Errorf("a bad model in --fallback: %v", err)
	}
	for _, tc := range []struct {
		text string
		line int
		want string
	}{
		{"[prices.\"openai:gpt-4.1\"]\ninput = 1\n", 1, "needs output"},
		{"[prices.\"openai:gpt-4.1\"]\ninput = 1\noutput = \"2\"\n", 3, "want a number"},
		{"[prices.\"openai:gpt-4.1\"]\ninput = -1\noutput = 2\n", 2, "not an amount"},
		{"\n[prices.\"openai:gpt-4.1\"]\ninput = 1\noutput = 2\ncached = 1\n", 5, "unknown key"},
		{"[prices.gpt]\ninput = 1\noutput = 2\n", 1, "provider:model"},
		{"fallback = \"openai:gpt-4.1\"\n", 1, "want an array of strings"},
	} {
		p := writeFile(t, t.TempDir(), "c.toml", tc.text, 0o600)
		_, err := Load(Options{File: p})
		if err == nil || !strings.HasPrefix(err.Error(), p+":"+itoa(tc.line)+":") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want line %d naming %q", tc.text, err, tc.line, tc.want)
		}
	}
}
