package llm

import (
	"errors"
	"fmt"
	"strings"
)

// Provider names a model provider.
type Provider string

// Providers autocoder can talk to. OpenAI also covers any server speaking
// the OpenAI chat completions protocol (vLLM, llama.cpp, LM Studio, ...)
// reached through OPENAI_BASE_URL.
const (
	ProviderOpenAI    Provider = "openai"
	ProviderAnthropic Provider = "anthropic"
	ProviderGemini    Provider = "gemini"
	ProviderOllama    Provider = "ollama"
)

// Providers lists every provider, in the order DefaultSpec tries their
// credentials; messages naming the providers are written from it.
var Providers = []Provider{ProviderOpenAI, ProviderAnthropic, ProviderGemini, ProviderOllama}

// DefaultModels is the model used for a provider when a spec names none.
var DefaultModels = map[Provider]string{
	ProviderOpenAI:    "gpt-4.1",
	ProviderAnthropic: "claude-sonnet-4-5",
	ProviderGemini:    "gemini-2.5-pro",
	ProviderOllama:    "qwen2.5-coder",
}

// Environment variables of the model settings (read by internal/config).
const (
	EnvModel            = "AUTOCODER_MODEL"
	EnvOpenAIKey        = "OPENAI_API_KEY"
	EnvOpenAIBaseURL    = "OPENAI_BASE_URL"
	EnvAnthropicKey     = "ANTHROPIC_API_KEY"
	EnvAnthropicBaseURL = "ANTHROPIC_BASE_URL"
	EnvGeminiKey        = "GEMINI_API_KEY"
	// EnvGoogleKey is read when EnvGeminiKey is unset, as Google's own
	// SDKs accept it.
	EnvGoogleKey     = "GOOGLE_API_KEY"
	EnvGeminiBaseURL = "GEMINI_BASE_URL"
	EnvOllamaHost    = "OLLAMA_HOST"
)

// credentialVars are the variables that make a provider the default, by
// provider, as people read them.
var credentialVars = map[Provider]string{
	ProviderOpenAI:    EnvOpenAIKey + " (or " + EnvOpenAIBaseURL + " for any OpenAI-compatible server)",
	ProviderAnthropic: EnvAnthropicKey,
	ProviderGemini:    EnvGeminiKey,
	ProviderOllama:    EnvOllamaHost,
}

// ProviderNames lists the providers as people read them: "a, b or c".
func ProviderNames() string {
	return orList(Providers, func(p Provider) string { return string(p) })
}

// CredentialVars lists, in DefaultSpec's order, the variables that make a
// provider the default: "OPENAI_API_KEY (...), ... or OLLAMA_HOST".
func CredentialVars() string {
	return orList(Providers, func(p Provider) string { return credentialVars[p] })
}

// ExampleSpecs are each provider with its default model, as --model takes them.
func ExampleSpecs() string {
	parts := make([]string, len(Providers))
	for i, p := range Providers {
		parts[i] = Spec{Provider: p, Model: DefaultModels[p]}.String()
	}
	return strings.Join(parts, ", ")
}

func orList[T any](items []T, name func(T) string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = name(it)
	}
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

var (
	// ErrNoModel means no model was named and the environment suggests none.
	ErrNoModel = errors.New("no model configured: pass --model provider:model " +
		"(e.g. " + ExampleSpecs() + "), write model = \"provider:model\" " +
		"in the configuration file (autocoder config show), or set " +
		EnvModel + ", " + CredentialVars())
	// ErrBadSpec reports a model spec that cannot be understood.
	ErrBadSpec = errors.New("invalid model spec")
	// ErrMissingKey reports a provider chosen without its API key.
	ErrMissingKey = errors.New("missing API key")
)

// Spec names a provider and one of its models.
type Spec struct {
	Provider Provider
	Model    string
}

// String renders the spec in the provider:model form ParseSpec reads.
func (s Spec) String() string { return string(s.Provider) + ":" + s.Model }

// Env is the part of the environment the model layer depends on.
type Env struct {
	ModelSpec        string // AUTOCODER_MODEL
	OpenAIKey        string
	OpenAIBaseURL    string
	AnthropicKey     string
	AnthropicBaseURL string
	GeminiKey        string
	// GeminiKeyBorrowed says GeminiKey is GOOGLE_API_KEY's, which people
	// hold for other Google APIs: it serves Gemini when Gemini is named,
	// but does not make Gemini the default.
	GeminiKeyBorrowed bool
	GeminiBaseURL     string
	OllamaHost        string
	// Limits of one call, as written in the environment; see Env.Limits.
	FirstByteTimeout string
	IdleTimeout      string
	MaxAnswer        string
	// BreakerCooldown is how long a model of a fallback chain that failed
	// is passed over (model_call.breaker_cooldown); empty is
	// DefaultBreakerCooldown.
	BreakerCooldown string
	// NoPromptCache sends Anthropic requests without cache breakpoints, so
	// every turn pays full price for its whole prompt: the baseline the
	// cache is measured against.
	NoPromptCache bool
}

// ParseSpec reads "provider:model" or just "provider" (the provider's
// default model). Only the first colon separates, so Ollama tags such as
// "ollama:qwen2.5-coder:7b" survive. An empty spec is an error: the
// caller resolves the default (Env.DefaultSpec, from internal/config).
func ParseSpec(s string) (Spec, error) {
	if strings.TrimSpace(s) == "" {
		return Spec{}, fmt.Errorf("%w: empty; write provider:model", ErrBadSpec)
	}
	return parseSpec(s)
}

// DefaultSpec picks a model from the environment: AUTOCODER_MODEL when set,
// else the first provider whose credentials are present, in the order
// of Providers: OpenAI (key or base URL), Anthropic, Gemini, Ollama.
func (e Env) DefaultSpec() (Spec, error) {
	switch {
	case strings.TrimSpace(e.ModelSpec) != "":
		sp, err := parseSpec(e.ModelSpec)
		if err != nil {
			return Spec{}, fmt.Errorf("%s: %w", EnvModel, err)
		}
		return sp, nil
	case e.OpenAIKey != "" || e.OpenAIBaseURL != "":
		return Spec{Provider: ProviderOpenAI, Model: DefaultModels[ProviderOpenAI]}, nil
	case e.AnthropicKey != "":
		return Spec{Provider: ProviderAnthropic, Model: DefaultModels[ProviderAnthropic]}, nil
	case e.GeminiKey != "" && !e.GeminiKeyBorrowed:
		return Spec{Provider: ProviderGemini, Model: DefaultModels[ProviderGemini]}, nil
	case e.OllamaHost != "":
		return Spec{Provider: ProviderOllama, Model: DefaultModels[ProviderOllama]}, nil
	}
	return Spec{}, ErrNoModel
}

func parseSpec(s string) (Spec, error) {
	name, model, _ := strings.Cut(strings.TrimSpace(s), ":")
	p := Provider(strings.ToLower(strings.TrimSpace(name)))
	def, ok := DefaultModels[p]
	if !ok {
		return Spec{}, fmt.Errorf("%w %q: provider must be %s, written provider:model", ErrBadSpec, s, ProviderNames())
	}
	model = strings.TrimSpace(model)
	if model == "" {
		if strings.Contains(s, ":") {
			return Spec{}, fmt.Errorf("%w %q names no model after the colon: write %s:MODEL, or %s alone for its default (%s)", ErrBadSpec, s, p, p, def)
		}
		model = def
	}
	return Spec{Provider: p, Model: model}, nil
}
