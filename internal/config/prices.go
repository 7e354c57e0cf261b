package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/autocoder/autocoder/internal/llm"
)

// ModelPrice is one [prices."provider:model"] table of the file: what the
// model costs in US dollars per million tokens. cached_input (a cache
// read) and cache_write are optional: without them they take the ratios
// to input of the model's list price, or Anthropic's documented ones
// (0.1 and 1.25) for its models, else the input price.
type ModelPrice struct {
	Model  string // provider:model
	Price  llm.Price
	Source Source
}

// priceKeys are the keys a price table requires; cacheKeys those it may add.
var (
	priceKeys = []string{"input", "output"}
	cacheKeys = []string{"cached_input", "cache_write"}
)

// readPrices reads the prices table: one table per model.
func (r *fileReader) readPrices(v any) {
	table, ok := v.(map[string]any)
	if !ok {
		r.fail("prices", "prices is a table of models: write [prices.\"provider:model\"] with input and output")
		return
	}
	names := make([]string, 0, len(table))
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		full := "prices." + name
		spec, err := llm.ParseSpec(name)
		if err != nil || !strings.Contains(name, ":") {
			r.fail(full, "[prices.%q]: name the model as \"provider:model\" in quotes, e.g. [prices.\"openai:gpt-4.1\"]", name)
			continue
		}
		entry, ok := table[name].(map[string]any)
		if !ok {
			r.fail(full, "[prices.%q] must be a table with input and output, dollars per million tokens", name)
			continue
		}
		p := ModelPrice{Model: spec.String(), Source: Source{Kind: FromFile, Path: r.path, Line: r.line(full)}}
		good := true
		for key, val := range entry {
			var into *float64
			switch key {
			case "input":
				into = &p.Price.InputPerMTok
			case "output":
				into = &p.Price.OutputPerMTok
			case "cached_input":
				into = &p.Price.CachedInputPerMTok
			case "cache_write":
				into = &p.Price.CacheWritePerMTok
			default:
				r.fail(full+"."+key, "[prices.%q] %s: unknown key; a price takes %s, and may add %s (dollars per million tokens)",
					name, key, strings.Join(priceKeys, " and "), strings.Join(cacheKeys, " and "))
				good = false
				continue
			}
			f, err := dollars(val)
			if err != nil {
				r.fail(full+"."+key, "[prices.%q] %s: %v", name, key, err)
				good = false
				continue
			}
			*into = f
		}
		for _, key := range priceKeys {
			if _, set := entry[key]; !set && good {
				r.fail(full, "[prices.%q] needs %s (dollars per million tokens)", name, key)
				good = false
			}
		}
		_, readSet := entry["cached_input"]
		_, writeSet := entry["cache_write"]
		p.Price = llm.WithCachePrices(spec, p.Price, readSet, writeSet)
		if good && !slices.ContainsFunc(r.prices, func(o ModelPrice) bool { return o.Model == p.Model }) {
			r.prices = append(r.prices, p)
		}
	}
}

// dollars reads an amount of 0 or more.
func dollars(v any) (float64, error) {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		return 0, fmt.Errorf("want a number, not %s", tomlType(v))
	}
	if f < 0 || f != f || f > 1e6 {
		return 0, fmt.Errorf("%s is not an amount of dollars from 0 to 1000000", strconv.FormatFloat(f, 'f', -1, 64))
	}
	return f, nil
}

// Prices are the file's prices, which override or add to the list prices.
func (c *Config) Prices() llm.PriceTable {
	t := llm.PriceTable{}
	for _, p := range c.prices {
		t[p.Model] = p.Price
	}
	return t
}

// FilePrices are the file's [prices] tables as written, for `config show`.
func (c *Config) FilePrices() []ModelPrice { return c.prices }

// Shown is the price for `config show`.
func (p ModelPrice) Shown() string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return fmt.Sprintf("$%s in, $%s cached in, $%s cache write, $%s out per million tokens",
		f(p.Price.InputPerMTok), f(p.Price.CachedInputPerMTok), f(p.Price.CacheWritePerMTok), f(p.Price.OutputPerMTok))
}
