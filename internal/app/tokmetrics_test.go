package app

import (
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/tokenizer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPromptCacheMetrics: the built-in tokenizer's prompt cache is
// exported: a prompt, then the same prompt extended, count one miss and
// one hit, with the reused tokens; the remote tokenizer registers nothing.
func TestPromptCacheMetrics(t *testing.T) {
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := registerPromptCache(reg, tok); err != nil {
		t.Fatal(err)
	}
	first := strings.Repeat("The router keeps a prefix index of every worker's cache. ", 40)
	tok.EncodeText(first, false)
	tok.EncodeText(first+"And then a new question?", false)
	want := `
# HELP kvrouter_tokenizer_prompt_cache_requests_total Prompts the in-process tokenizer encoded through its prompt cache, by outcome: hit (resumed from a recent prompt's prefix) or miss (encoded in full).
# TYPE kvrouter_tokenizer_prompt_cache_requests_total counter
kvrouter_tokenizer_prompt_cache_requests_total{outcome="hit"} 1
kvrouter_tokenizer_prompt_cache_requests_total{outcome="miss"} 1
# HELP kvrouter_tokenizer_prompt_cache_entries Recent prompts the tokenizer's prompt cache holds.
# TYPE kvrouter_tokenizer_prompt_cache_entries gauge
kvrouter_tokenizer_prompt_cache_entries 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kvrouter_tokenizer_prompt_cache_requests_total",
		"kvrouter_tokenizer_prompt_cache_entries"); err != nil {
		t.Error(err)
	}
	st := tok.PromptCacheStats()
	if n, err := testutil.GatherAndCount(reg, "kvrouter_tokenizer_prompt_cache_tokens_total"); err != nil || n != 2 {
		t.Errorf("tokens_total series = %d (%v), want reused and encoded", n, err)
	}
	// The first prompt is encoded in full, the second reuses nearly all
	// of it.
	if st.ReusedTokens < 400 || st.EncodedTokens > st.ReusedTokens+40 {
		t.Errorf("stats %+v: the extension should reuse the first prompt's tokens", st)
	}
	if err := registerPromptCache(prometheus.NewRegistry(), placeholderTokenizer{}); err != nil {
		t.Errorf("a tokenizer without a cache: %v", err)
	}
}
