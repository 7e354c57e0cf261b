package llm_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/autocoder/autocoder/internal/llm"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    llm.Spec
		wantErr bool
	}{
		{"openai:gpt-4o", llm.Spec{Provider: llm.ProviderOpenAI, Model: "gpt-4o"}, false},
		{" Anthropic : claude-opus-4-1 ", llm.Spec{Provider: llm.ProviderAnthropic, Model: "claude-opus-4-1"}, false},
		{"ollama:qwen2.5-coder:7b", llm.Spec{Provider: llm.ProviderOllama, Model: "qwen2.5-coder:7b"}, false},
		{"ollama", llm.Spec{Provider: llm.ProviderOllama, Model: llm.DefaultModels[llm.ProviderOllama]}, false},
		{"openai:", llm.Spec{}, true}, // a colon promises a model name
		{"openai: ", llm.Spec{}, true},
		{"gpt-4o", llm.Spec{}, true},
		{"gemini:gemini-2.5-flash", llm.Spec{Provider: llm.ProviderGemini, Model: "gemini-2.5-flash"}, false},
		{"gemini", llm.Spec{Provider: llm.ProviderGemini, Model: llm.DefaultModels[llm.ProviderGemini]}, false},
		{"google:gemini-2.5-pro", llm.Spec{}, true},
		{":gpt-4o", llm.Spec{}, true},
	}
	for _, tt := range tests {
		got, err := llm.ParseSpec(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSpec(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, llm.ErrBadSpec) {
			t.Errorf("ParseSpec(%q) error %v is not ErrBadSpec", tt.in, err)
		}
	}
}

func TestDefaultSpec(t *testing.T) {
	openai := llm.Spec{Provider: llm.ProviderOpenAI, Model: llm.DefaultModels[llm.ProviderOpenAI]}
	anthropic := llm.Spec{Provider: llm.ProviderAnthropic, Model: llm.DefaultModels[llm.ProviderAnthropic]}
	gemini := llm.Spec{Provider: llm.ProviderGemini, Model: llm.DefaultModels[llm.ProviderGemini]}
	ollama := llm.Spec{Provider: llm.ProviderOllama, Model: llm.DefaultModels[llm.ProviderOllama]}
	tests := []struct {
		name string
		env  llm.Env
		want llm.Spec
		err  error
	}{
		{"explicit wins", llm.Env{ModelSpec: "ollama:llama3", OpenAIKey: "k"}, llm.Spec{Provider: llm.ProviderOllama, Model: "llama3"}, nil},
		{"openai key", llm.Env{OpenAIKey: "k", AnthropicKey: "k"}, openai, nil},
		{"openai base url", llm.Env{OpenAIBaseURL: "http://localhost:8000/v1", AnthropicKey: "k"}, openai, nil},
		{"anthropic key", llm.Env{AnthropicKey: "k", GeminiKey: "k", OllamaHost: "h"}, anthropic, nil},
		{"gemini key", llm.Env{GeminiKey: "k", OllamaHost: "h"}, gemini, nil},
		{"ollama host", llm.Env{OllamaHost: "localhost"}, ollama, nil},
		{"nothing", llm.Env{}, llm.Spec{}, llm.ErrNoModel},
		{"bad explicit", llm.Env{ModelSpec: "nope:x"}, llm.Spec{}, llm.ErrBadSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.env.DefaultSpec()
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Errorf("DefaultSpec() = %v, %v; want %v, %v", got, err, tt.want, tt.err)
			}
		})
	}
}

// TestParseSpecEmptyIsAnError: an empty spec is refused instead of read
// from the process environment: the caller passes the model it resolved
// (internal/config), and ErrNoModel says every way to name one.
func TestParseSpecEmptyIsAnError(t *testing.T) {
	t.Setenv(llm.EnvAnthropicKey, "k")
	if got, err := llm.ParseSpec(""); !errors.Is(err, llm.ErrBadSpec) {
		t.Errorf("ParseSpec(\"\") with ANTHROPIC_API_KEY = %v, %v; want ErrBadSpec", got, err)
	}
	_, err := llm.Env{}.DefaultSpec()
	for _, s := range []string{"AUTOCODER_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OLLAMA_HOST",
		"gemini:gemini-2.5-pro", "--model provider:model", "model ="} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("ErrNoModel message lacks %q", s)
		}
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		model   string
		in, out int
		want    float64
	}{
		{"gpt-4.1", 1_000_000, 1_000_000, 10},
		{"gpt-4.1-mini-2025-04-14", 1_000_000, 0, 0.4},
		{"claude-sonnet-4-5-20250929", 2000, 1000, 0.021},
		{"claude-opus-4-20250514", 0, 1_000_000, 75},
		{"gemini-2.5-pro", 1_000_000, 1_000_000, 11.25},
		{"gemini-2.5-flash-lite-preview-09-2025", 1_000_000, 0, 0.1}, // priced as gemini-2.5-flash-lite, not -flash
		{"qwen2.5-coder:7b", 5000, 5000, 0},
		{"gpt-4.1x", 1_000_000, 0, 0}, // not a "-" boundary: unknown
	}
	for _, tt := range tests {
		got := llm.Cost(tt.model, tt.in, tt.out)
		if diff := got - tt.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("Cost(%q, %d, %d) = %v, want %v", tt.model, tt.in, tt.out, got, tt.want)
		}
	}
}
