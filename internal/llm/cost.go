package llm

import "strings"

// Price is what a model costs in US dollars per million tokens: fresh
// input, input read from the prompt cache, input written to it, and
// output.
type Price struct {
	InputPerMTok       float64
	CachedInputPerMTok float64
	CacheWritePerMTok  float64
	OutputPerMTok      float64
}

// Prices holds list prices of well-known models. Dated snapshots
// ("gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929") are priced by their
// family name. Local and unknown models cost nothing.
//
// Cached input is a quarter of the input price for the GPT-4.1 family and
// o4-mini, half for GPT-4o and o3-mini; OpenAI charges nothing extra to
// write its cache. Anthropic bills a cache read at a tenth of the input
// price and a (five-minute) cache write at 1.25 times it. Gemini's are
// Google's list prices for prompts up to 200,000 tokens (longer ones cost
// more; set [prices] in the configuration file to price them); its implicit
// cache bills a read at a tenth of the input price and nothing to write.
// All are defaults: the configuration file's [prices] override them.
var Prices = map[string]Price{
	"gpt-4.1":               {InputPerMTok: 2, CachedInputPerMTok: 0.5, CacheWritePerMTok: 2, OutputPerMTok: 8},
	"gpt-4.1-mini":          {InputPerMTok: 0.4, CachedInputPerMTok: 0.1, CacheWritePerMTok: 0.4, OutputPerMTok: 1.6},
	"gpt-4.1-nano":          {InputPerMTok: 0.1, CachedInputPerMTok: 0.025, CacheWritePerMTok: 0.1, OutputPerMTok: 0.4},
	"gpt-4o":                {InputPerMTok: 2.5, CachedInputPerMTok: 1.25, CacheWritePerMTok: 2.5, OutputPerMTok: 10},
	"gpt-4o-mini":           {InputPerMTok: 0.15, CachedInputPerMTok: 0.075, CacheWritePerMTok: 0.15, OutputPerMTok: 0.6},
	"o3-mini":               {InputPerMTok: 1.1, CachedInputPerMTok: 0.55, CacheWritePerMTok: 1.1, OutputPerMTok: 4.4},
	"o4-mini":               {InputPerMTok: 1.1, CachedInputPerMTok: 0.275, CacheWritePerMTok: 1.1, OutputPerMTok: 4.4},
	"claude-opus-4-1":       {InputPerMTok: 15, CachedInputPerMTok: 1.5, CacheWritePerMTok: 18.75, OutputPerMTok: 75},
	"claude-opus-4":         {InputPerMTok: 15, CachedInputPerMTok: 1.5, CacheWritePerMTok: 18.75, OutputPerMTok: 75},
	"claude-sonnet-4-5":     {InputPerMTok: 3, CachedInputPerMTok: 0.3, CacheWritePerMTok: 3.75, OutputPerMTok: 15},
	"claude-sonnet-4":       {InputPerMTok: 3, CachedInputPerMTok: 0.3, CacheWritePerMTok: 3.75, OutputPerMTok: 15},
	"claude-haiku-4-5":      {InputPerMTok: 1, CachedInputPerMTok: 0.1, CacheWritePerMTok: 1.25, OutputPerMTok: 5},
	"claude-3-5-haiku":      {InputPerMTok: 0.8, CachedInputPerMTok: 0.08, CacheWritePerMTok: 1, OutputPerMTok: 4},
	"gemini-2.5-pro":        {InputPerMTok: 1.25, CachedInputPerMTok: 0.125, CacheWritePerMTok: 1.25, OutputPerMTok: 10},
	"gemini-2.5-flash":      {InputPerMTok: 0.3, CachedInputPerMTok: 0.03, CacheWritePerMTok: 0.3, OutputPerMTok: 2.5},
	"gemini-2.5-flash-lite": {InputPerMTok: 0.1, CachedInputPerMTok: 0.01, CacheWritePerMTok: 0.1, OutputPerMTok: 0.4},
	"gemini-2.0-flash":      {InputPerMTok: 0.1, CachedInputPerMTok: 0.025, CacheWritePerMTok: 0.1, OutputPerMTok: 0.4},
}

// PriceOf finds a model's price: an exact entry, else the longest entry
// the name extends at a "-" boundary.
func PriceOf(model string) (Price, bool) {
	if p, ok := Prices[model]; ok {
		return p, true
	}
	best := ""
	for name := range Prices {
		if len(name) > len(best) && strings.HasPrefix(model, name+"-") {
			best = name
		}
	}
	p, ok := Prices[best]
	return p, ok
}

// WithCachePrices fills in the cached input and cache write prices of a
// price given only for input and output: in the ratios of the model's list
// price when it has one, else in Anthropic's documented ratios for its
// models, else at the input price (no discount assumed).
func WithCachePrices(spec Spec, p Price, readSet, writeSet bool) Price {
	read, write := 1.0, 1.0
	if list, ok := PriceOf(spec.Model); ok && list.InputPerMTok > 0 {
		read, write = list.CachedInputPerMTok/list.InputPerMTok, list.CacheWritePerMTok/list.InputPerMTok
	} else if spec.Provider == ProviderAnthropic {
		read, write = 0.1, 1.25
	}
	if !readSet {
		p.CachedInputPerMTok = p.InputPerMTok * read
	}
	if !writeSet {
		p.CacheWritePerMTok = p.InputPerMTok * write
	}
	return p
}

// Cost is the price in US dollars of the tokens u counts: fresh input,
// cache reads, cache writes and output, each at its own price.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.FreshTokens())*p.InputPerMTok +
		float64(u.CacheReadTokens)*p.CachedInputPerMTok +
		float64(u.CacheWriteTokens)*p.CacheWritePerMTok +
		float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// Cost is the price in US dollars of in prompt and out completion tokens,
// none of them cached.
func Cost(model string, in, out int) float64 {
	p, _ := PriceOf(model)
	return p.Cost(Usage{InputTokens: in, OutputTokens: out})
}

// PriceTable holds prices that override or add to the list prices, by
// "provider:model" or by model name.
type PriceTable map[string]Price

// Of is spec's price: the table's entry for "provider:model", else for
// the model's name, else the list price (PriceOf).
func (t PriceTable) Of(spec Spec) (Price, bool) {
	if p, ok := t[spec.String()]; ok {
		return p, true
	}
	if p, ok := t[spec.Model]; ok {
		return p, true
	}
	return PriceOf(spec.Model)
}

// Cost is the price in US dollars of the tokens u counts for spec;
// nothing for a model without a price.
func (t PriceTable) Cost(spec Spec, u Usage) float64 {
	p, _ := t.Of(spec)
	return p.Cost(u)
}
