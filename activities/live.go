package activities

import (
	"sync/atomic"

	"github.com/autocoder/autocoder/internal/llm"
)

// LiveSettings are the settings a running worker takes from its
// configuration as it changes, without a restart: the models (keys, base
// URLs, the default model, the limits of a call) and their prices. A
// call under way keeps the model it started with.
type LiveSettings struct {
	Models ModelFactory
	Prices llm.PriceTable
}

// Live holds the LiveSettings once set; until then the Activities' own
// Models and Prices serve.
type Live struct{ p atomic.Pointer[LiveSettings] }

// Set replaces the models and prices the activities use from now on.
func (l *Live) Set(s LiveSettings) { l.p.Store(&s) }

func (a *Activities) models() ModelFactory {
	if s := a.Live.p.Load(); s != nil {
		return s.Models
	}
	return a.Models
}

func (a *Activities) prices() llm.PriceTable {
	if s := a.Live.p.Load(); s != nil {
		return s.Prices
	}
	return a.Prices
}
