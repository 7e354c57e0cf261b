package llm

import "strings"

// Price is what a model costs in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64
	OutputPerMTok float64
}

// Prices holds list prices of well-known models. Dated snapshots
// ("gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929") are priced by their
// family name. Local and unknown models cost nothing.
var Prices = map[string]Price{
	"gpt-4.1":           {InputPerMTok: 2, OutputPerMTok: 8},
	"gpt-4.1-mini":      {InputPerMTok: 0.4, OutputPerMTok: 1.6},
	"gpt-4.1-nano":      {InputPerMTok: 0.1, OutputPerMTok: 0.4},
	"gpt-4o":            {InputPerMTok: 2.5, OutputPerMTok: 10},
	"gpt-4o-mini":       {InputPerMTok: 0.15, OutputPerMTok: 0.6},
	"o3-mini":           {InputPerMTok: 1.1, OutputPerMTok: 4.4},
	"o4-mini":           {InputPerMTok: 1.1, OutputPerMTok: 4.4},
	"claude-opus-4-1":   {InputPerMTok: 15, OutputPerMTok: 75},
	"claude-opus-4":     {InputPerMTok: 15, OutputPerMTok: 75},
	"claude-sonnet-4-5": {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-sonnet-4":   {InputPerMTok: 3, OutputPerMTok: 15},
	"claude-haiku-4-5":  {InputPerMTok: 1, OutputPerMTok: 5},
	"claude-3-5-haiku":  {InputPerMTok: 0.8, OutputPerMTok: 4},
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

// Cost is the price in US dollars of in prompt and out completion tokens.
func Cost(model string, in, out int) float64 {
	p, _ := PriceOf(model)
	return (float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok) / 1e6
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

// Cost is the price in US dollars of in prompt and out completion tokens
// of spec; nothing for a model without a price.
func (t PriceTable) Cost(spec Spec, in, out int) float64 {
	p, _ := t.Of(spec)
	return (float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok) / 1e6
}
