package worker

import (
	"fmt"
	"sync"

	"github.com/autocoder/autocoder/activities"
	"github.com/autocoder/autocoder/internal/llm"
)

// Models returns a factory that builds each model once. Keys and base URLs
// come from env, which is the worker's: the CLI never needs them.
func Models(env llm.Env) activities.ModelFactory {
	var mu sync.Mutex
	built := map[llm.Spec]llm.Model{}
	return func(name string) (llm.Model, llm.Spec, error) {
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
}

func resolveSpec(env llm.Env, name string) (llm.Spec, error) {
	if name == "" {
		return env.DefaultSpec()
	}
	return llm.ParseSpec(name)
}
