package worker

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
)

// Models returns a factory that builds each model once. Keys and base URLs
// come from env, which is the worker's: the CLI never needs them. A name
// listing several models ("anthropic:claude-sonnet-4-5,openai:gpt-4.1")
// is a fallback chain, whose breakers this worker holds for every task.
func Models(env llm.Env) activities.ModelFactory {
	var mu sync.Mutex
	built := map[llm.Spec]llm.Model{}
	breakers := &llm.Breakers{Cooldown: breakerCooldown(env)}
	one := func(name string) (llm.Model, llm.Spec, error) {
		spec, err := resolveSpec(env, name)
		if err != nil {
			return nil, llm.Spec{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		if m, ok := built[spec]; ok {
			return m, spec, nil
		}
		m, err := llm.New(spec, env)
		if err != nil {
			return nil, spec, fmt.Errorf("model %s: %w", spec, err)
		}
		built[spec] = m
		return m, spec, nil
	}
	return func(name string) (llm.Model, llm.Spec, error) {
		names := strings.Split(name, llm.ChainSeparator)
		if len(names) == 1 {
			return one(name)
		}
		chain := &llm.Chain{Breakers: breakers}
		for _, n := range names {
			m, spec, err := one(strings.TrimSpace(n))
			if err != nil {
				return nil, spec, err
			}
			if !containsSpec(chain.Links, spec) {
				chain.Links = append(chain.Links, llm.Link{Spec: spec, Model: m})
			}
		}
		return chain, chain.Links[0].Spec, nil
	}
}

func containsSpec(links []llm.Link, spec llm.Spec) bool {
	for _, l := range links {
		if l.Spec == spec {
			return true
		}
	}
	return false
}

// breakerCooldown is env's cooldown (validated by internal/config); unset
// is llm.DefaultBreakerCooldown.
func breakerCooldown(env llm.Env) time.Duration {
	d, _ := time.ParseDuration(strings.TrimSpace(env.BreakerCooldown))
	return d
}

func resolveSpec(env llm.Env, name string) (llm.Spec, error) {
	if name == "" {
		return env.DefaultSpec()
	}
	return llm.ParseSpec(name)
}
