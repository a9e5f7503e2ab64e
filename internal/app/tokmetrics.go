package app

import (
	"fmt"

	"github.com/kvrouter/kvrouter/tokenizer"
	"github.com/prometheus/client_golang/prometheus"
)

// promptCacheStatser is an in-process tokenizer with a prompt cache
// (tokenizer.Local).
type promptCacheStatser interface {
	PromptCacheStats() tokenizer.PromptCacheStats
}

// promptCacheCollector exports the tokenizer's prompt cache (prompts that
// extend a recent one encode only their new part): requests by outcome,
// tokens reused and encoded, and its size against its bounds.
type promptCacheCollector struct {
	t                promptCacheStatser
	requests, tokens *prometheus.Desc
	entries, bytes   *prometheus.Desc
}

func newPromptCacheCollector(t promptCacheStatser) *promptCacheCollector {
	return &promptCacheCollector{t: t,
		requests: prometheus.NewDesc("kvrouter_tokenizer_prompt_cache_requests_total",
			"Prompts the in-process tokenizer encoded through its prompt cache, by outcome: hit (resumed from a recent prompt's prefix) or miss (encoded in full).", []string{"outcome"}, nil),
		tokens: prometheus.NewDesc("kvrouter_tokenizer_prompt_cache_tokens_total",
			"Token ids of those prompts, by source: reused (copied from a recent prompt) or encoded.", []string{"source"}, nil),
		entries: prometheus.NewDesc("kvrouter_tokenizer_prompt_cache_entries",
			"Recent prompts the tokenizer's prompt cache holds.", nil, nil),
		bytes: prometheus.NewDesc("kvrouter_tokenizer_prompt_cache_bytes",
			"Bytes the tokenizer's prompt cache holds (text, ids and resume points).", nil, nil),
	}
}

func (c *promptCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.requests, c.tokens, c.entries, c.bytes} {
		ch <- d
	}
}

func (c *promptCacheCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.t.PromptCacheStats()
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(st.Hits), "hit")
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(st.Misses), "miss")
	ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, float64(st.ReusedTokens), "reused")
	ch <- prometheus.MustNewConstMetric(c.tokens, prometheus.CounterValue, float64(st.EncodedTokens), "encoded")
	ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(st.Entries))
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(st.Bytes))
}

// registerPromptCache registers the prompt cache metrics when t is an
// in-process tokenizer (the remote one has no cache).
func registerPromptCache(reg prometheus.Registerer, t tokenizer.Tokenizer) error {
	s, ok := t.(promptCacheStatser)
	if !ok {
		return nil
	}
	if err := reg.Register(newPromptCacheCollector(s)); err != nil {
		return fmt.Errorf("serve: tokenizer metrics: %w", err)
	}
	return nil
}
