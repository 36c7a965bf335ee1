package agent

import (
	"math"
	"strings"
)

// Price is what a model's tokens cost, in US dollars per million: input,
// output, and the prompt cache's reads and writes.
type Price struct {
	Input, Output, CacheRead, CacheWrite float64
}

// Cost is what u's tokens cost at p.
func (p Price) Cost(u Usage) float64 {
	return (float64(u.InputTokens)*p.Input + float64(u.OutputTokens)*p.Output +
		float64(u.CacheReadTokens)*p.CacheRead + float64(u.CacheWriteTokens)*p.CacheWrite) / 1e6
}

// prices are the list prices of the models the agents run, by the start of
// the model's name, longest first where one name starts another
// (docs/agents.md "Prices"). They estimate the cost of agents that report
// only tokens (Codex, interactive Claude Code until it exits), for
// max_cost_usd; a model not listed costs as its family's default.
var prices = []struct {
	prefix string
	price  Price
}{
	{"claude-opus-4-5", Price{5, 25, 0.5, 6.25}},
	{"claude-opus-4-6", Price{5, 25, 0.5, 6.25}},
	{"claude-opus-4", Price{15, 75, 1.5, 18.75}},
	{"claude-sonnet-4", Price{3, 15, 0.3, 3.75}},
	{"claude-haiku-4", Price{1, 5, 0.1, 1.25}},
	{"claude-3-5-haiku", Price{0.8, 4, 0.08, 1}},
	{"gpt-5-mini", Price{0.25, 2, 0.025, 0}},
	{"gpt-5-nano", Price{0.05, 0.4, 0.005, 0}},
	{"gpt-5", Price{1.25, 10, 0.125, 0}},
	{"o4-mini", Price{1.1, 4.4, 0.275, 0}},
}

// Family defaults: a model sessiond does not know costs as the family's
// usual one (Claude Sonnet, GPT-5).
var (
	claudeDefaultPrice = Price{3, 15, 0.3, 3.75}
	codexDefaultPrice  = Price{1.25, 10, 0.125, 0}
)

// PriceOf is the price of model, or def for a model not listed.
func PriceOf(model string, def Price) Price {
	model = strings.ToLower(strings.TrimSpace(model))
	for _, p := range prices {
		if strings.HasPrefix(model, p.prefix) {
			return p.price
		}
	}
	return def
}

// roundUSD rounds an estimate to a billionth of a dollar, so that sums
// read in any order agree.
func roundUSD(x float64) float64 { return math.Round(x*1e9) / 1e9 }
