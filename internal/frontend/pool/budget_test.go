package pool

import (
	"strings"
	"testing"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestParseSGLangBudget: chunked_prefill_size, else max_prefill_tokens
// when chunking is off (-1 or null), else unknown; sizes out of bounds are
// unknown.
func TestParseSGLangBudget(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		err  bool
	}{
		{`{"chunked_prefill_size":8192,"max_prefill_tokens":16384}`, 8192, false},
		{`{"chunked_prefill_size":-1,"max_prefill_tokens":16384}`, 16384, false},
		{`{"chunked_prefill_size":null,"max_prefill_tokens":16384}`, 16384, false},
		{`{"model_path":"m"}`, 0, false},
		{`{"chunked_prefill_size":2147483648}`, 0, false},
		{`{"chunked_prefill_size":"big"}`, 0, true},
		{`[`, 0, true},
	} {
		got, err := parseSGLangBudget(strings.NewReader(tc.body))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s: %d, %v; want %d, error %v", tc.body, got, err, tc.want, tc.err)
		}
	}
}

// FuzzParseSGLangBudget: any body gives a budget within bounds or an
// error, never a panic.
func FuzzParseSGLangBudget(f *testing.F) {
	f.Add(`{"chunked_prefill_size":8192}`)
	f.Add(`{"chunked_prefill_size":-1,"max_prefill_tokens":16384}`)
	f.Add(`{"internal_states":[{"a":1}],"chunked_prefill_size":1e3}`)
	f.Fuzz(func(t *testing.T, body string) {
		n, err := parseSGLangBudget(strings.NewReader(body))
		if n < 0 || n > discovery.MaxBatchedTokens || (err != nil && n != 0) {
			t.Fatalf("%q: %d, %v", body, n, err)
		}
	})
}
