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
			fmt.Fprint(w, "# TYPE sglang:token_usage gauge\nsglang:token_usage{model_name=\"m\"} 0.28\n")
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
			s.pool.Poll(t.Context(), &w, time.Now().Add(time.Duration(i)*time.Second))
		}
	}
	if got, want := budgets(), "1:6000 2:4096 3:1000"; got != want {
		t.Fatalf("budgets after polling %s, want %s", got, want)
	}
	if n := infoHits.Load(); n != 1 {
		t.Errorf("/get_server_info asked %d times, want once (worker 2 only)", n)
	}
}
