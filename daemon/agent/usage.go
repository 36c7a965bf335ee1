package agent

import "math"

// Usage is an agent's token use and, where the agent reports it, its cost.
// InputTokens counts input tokens that were neither read from nor written
// to the prompt cache (Claude's input_tokens; Codex's input_tokens less its
// cached_input_tokens), so that the four token counts add up to the total.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CostUSD is the cost the agent reported, when CostKnown. Claude Code
	// reports it when a process ends (its cost-state record), so it lags
	// the token counts; Codex reports none.
	CostUSD   float64 `json:"cost_usd,omitempty"`
	CostKnown bool    `json:"cost_known,omitempty"`
	// EstimatedUSD is the tokens' cost at their models' list prices
	// (PriceOf): what a cap holds to where the agent reports no cost.
	EstimatedUSD float64 `json:"estimated_usd,omitempty"`
}

// Tokens is the sum of the four token counts.
func (u Usage) Tokens() int64 {
	return addSat(addSat(u.InputTokens, u.OutputTokens), addSat(u.CacheReadTokens, u.CacheWriteTokens))
}

// Add returns u and v together.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:      addSat(u.InputTokens, v.InputTokens),
		OutputTokens:     addSat(u.OutputTokens, v.OutputTokens),
		CacheReadTokens:  addSat(u.CacheReadTokens, v.CacheReadTokens),
		CacheWriteTokens: addSat(u.CacheWriteTokens, v.CacheWriteTokens),
		CostUSD:          u.CostUSD + v.CostUSD,
		CostKnown:        u.CostKnown || v.CostKnown,
		EstimatedUSD:     u.EstimatedUSD + v.EstimatedUSD,
	}
}

// Since returns what u counts beyond an earlier reading base (a session's
// share of a resumed conversation), never below zero.
func (u Usage) Since(base Usage) Usage {
	return Usage{
		InputTokens:      max(u.InputTokens-base.InputTokens, 0),
		OutputTokens:     max(u.OutputTokens-base.OutputTokens, 0),
		CacheReadTokens:  max(u.CacheReadTokens-base.CacheReadTokens, 0),
		CacheWriteTokens: max(u.CacheWriteTokens-base.CacheWriteTokens, 0),
		CostUSD:          max(u.CostUSD-base.CostUSD, 0),
		CostKnown:        u.CostKnown,
		EstimatedUSD:     max(u.EstimatedUSD-base.EstimatedUSD, 0),
	}
}

// addSat adds two non-negative counts, saturating instead of wrapping.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// count makes a decoded token count safe to add: negative is zero.
func count(n int64) int64 { return max(n, 0) }

// cost makes a decoded cost safe to keep: negative, NaN or infinite is none.
func cost(c float64) (float64, bool) {
	if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
		return 0, false
	}
	return c, true
}
