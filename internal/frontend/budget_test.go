package frontend

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// TestWorkerBudget: a worker's budget per step is its registration's; a
// vLLM worker that names none gets Config.WorkerMaxBatchedTokens (vLLM
// reports it nowhere); an SGLang worker that names none gets the engine's
// chunked_prefill_size from /get_server_info after its first poll (asked
// once), and one that names it keeps its own. Debug index shows each.
func TestWorkerBudget(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.WorkerMaxBatchedTokens = 6000 })
	var infoHits atomic.Int64
	sglang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			fmt.Fprint(w, sglangMetrics)
		case "/get_server_info":
			infoHits.Add(1)
			fmt.Fprint(w, `{"model_path":"m","chunked_prefill_size":4096,"max_prefill_tokens":16384,"internal_states":[{}],"version":"0.5"}`)
		case "/v1/models":
			writeJSON(w, 200, map[string]any{"data": []any{}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(sglang.Close)
	vllm := newFakeEngine(t, s.cfg.Router.BlockSize)
	for _, w := range []discovery.Worker{
		{ID: 1, URL: vllm.URL},
		{ID: 2, URL: sglang.URL},
		{ID: 3, URL: sglang.URL, MaxBatchedTokens: 1000},
	} {
		if err := s.Join(w); err != nil {
			t.Fatal(err)
		}
	}
	budgets := func() string {
		var b []string
		for _, x := range s.IndexSummaries().Workers {
			if x.DPRank == 0 {
				b = append(b, fmt.Sprintf("%d:%d", x.Worker, x.MaxBatchedTokens))
			}
		}
		return strings.Join(b, " ")
	}
	if got, want := budgets(), "1:6000 2:6000 3:1000"; got != want {
		t.Fatalf("budgets before polling %s, want %s", got, want)
	}
	for i := range 3 {
		for _, w := range s.Workers() {
			s.pool.pollWorker(t.Context(), &w, time.Now().Add(time.Duration(i)*time.Second))
		}
	}
	if got, want := budgets(), "1:6000 2:4096 3:1000"; got != want {
		t.Fatalf("budgets after polling %s, want %s", got, want)
	}
	if n := infoHits.Load(); n != 1 {
		t.Errorf("/get_server_info asked %d times, want once (worker 2 only)", n)
	}
}

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
