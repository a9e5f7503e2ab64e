package frontend

import (
	"encoding/json"
	"fmt"
	"github.com/kvrouter/kvrouter/internal/frontend/pool"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// fakeEngine serves /metrics with a block size and /health while healthy.
type fakeEngine struct {
	*httptest.Server
	healthy   atomic.Bool
	blockSize atomic.Int64
	health    atomic.Int64 // /health requests
}

func newFakeEngine(t *testing.T, blockSize int) *fakeEngine {
	e := &fakeEngine{}
	e.healthy.Store(true)
	e.blockSize.Store(int64(blockSize))
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.healthy.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			if r.URL.Path == "/health" {
				e.health.Add(1)
			}
			return
		}
		switch r.URL.Path {
		case "/health":
			e.health.Add(1)
		case "/metrics":
			fmt.Fprintf(w, "vllm:kv_cache_usage_perc 0.5\nvllm:cache_config_info{block_size=\"%d\",num_gpu_blocks=\"777\"} 1\n", e.blockSize.Load())
		case "/v1/models":
			writeJSON(w, 200, map[string]any{"data": []map[string]any{
				{"id": "base", "root": "/models/base", "parent": nil},
				{"id": "sql-lora", "root": "/adapters/sql", "parent": "base"},
			}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(e.Close)
	return e
}

// TestEngineHealthAndBlockSize: a worker whose engine reports another
// block size is refused (counted, logged, out of routing, /readyz 503)
// and comes back once it reports the router's; three failed polls take a
// worker out, /health probes with backoff bring it back; the capacity and
// the LoRA adapters come from the engine.
func TestEngineHealthAndBlockSize(t *testing.T) {
	s := newServerWith(t, true, func(c *Config) { c.LoadPollInterval = 5 * time.Millisecond })
	bs := s.cfg.Router.BlockSize
	e := newFakeEngine(t, bs*2)
	if err := s.AddWorker(Worker{ID: 1, URL: e.URL}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the block size mismatch refused", func() bool {
		return hasMetric(metricLines(t, s), `kvrouter_workers_refused_total{reason="block_size"} 1`)
	})
	if st := s.Router().Stats(); st.Workers != 0 {
		t.Fatalf("refused worker still routed: %+v", st)
	}
	want := fmt.Sprintf("no workers up: 1 refused for block_size (worker 1: engine %d, router %d); see the log", bs*2, bs)
	if rec := do(t, s.Handler(), "GET", "/readyz", ""); rec.Code != 503 || !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("/readyz with only a refused worker: %d %q, want %q", rec.Code, rec.Body, want)
	}
	rep := s.IndexSummaries()
	if h := rep.Workers[0].Health; h == nil || h.Refused != "block_size" || h.EngineBlockSize != bs*2 {
		t.Fatalf("debug index health %+v", h)
	}

	e.blockSize.Store(int64(bs))
	waitUntil(t, "worker back once its block size matches", func() bool { return s.Router().Stats().Workers == 1 })
	if rec := do(t, s.Handler(), "GET", "/readyz", ""); rec.Code != 200 {
		t.Fatalf("/readyz: %d %s", rec.Code, rec.Body)
	}
	waitUntil(t, "capacity and KV usage from the engine", func() bool {
		w, _ := s.pool.Get(1)
		return w.Info.TotalKVBlocks == 777 && hasMetric(metricLines(t, s), `kvrouter_worker_kv_usage{worker="1"} 0.5`)
	})
	if got := s.adapters.LoRA("sql-lora"); got != "sql-lora" || s.adapters.LoRA("base") != "" {
		t.Fatalf("adapters learnt from /v1/models: sql-lora -> %q, base -> %q", got, s.adapters.LoRA("base"))
	}

	e.healthy.Store(false)
	waitUntil(t, "three failed polls take the worker out", func() bool { return s.Router().Stats().Workers == 0 })
	if rec := do(t, s.Handler(), "GET", "/readyz", ""); rec.Code != 503 {
		t.Fatalf("/readyz with the only worker down: %d %s", rec.Code, rec.Body)
	}
	probes := e.health.Load()
	waitUntil(t, "two failed probes", func() bool { return e.health.Load() >= probes+2 })
	e.healthy.Store(true)
	waitUntil(t, "worker back after a healthy probe", func() bool { return s.Router().Stats().Workers == 1 })
	if !hasMetric(metricLines(t, s), `kvrouter_worker_health_probes_total{outcome="up"} 1`) {
		t.Error("no up probe counted")
	}
}

// TestOneFailedPollKeepsWorker: a single failed /metrics poll does not
// take a worker out of routing.
func TestOneFailedPollKeepsWorker(t *testing.T) {
	s := newServerWith(t, false, nil)
	e := newFakeEngine(t, s.cfg.Router.BlockSize)
	if err := s.AddWorker(Worker{ID: 1, URL: e.URL}); err != nil {
		t.Fatal(err)
	}
	w, _ := s.pool.Get(1)
	ctx := t.Context()
	e.healthy.Store(false)
	for range pool.PollFailuresDown - 1 {
		s.pool.Poll(ctx, w, time.Now())
	}
	if st := s.Router().Stats(); st.Workers != 1 {
		t.Fatalf("%d failed polls removed the worker", pool.PollFailuresDown-1)
	}
	e.healthy.Store(true)
	s.pool.Poll(ctx, w, time.Now())
	e.healthy.Store(false)
	s.pool.Poll(ctx, w, time.Now())
	if st := s.Router().Stats(); st.Workers != 1 {
		t.Fatal("failures separated by a success removed the worker")
	}
	for range pool.PollFailuresDown {
		s.pool.Poll(ctx, w, time.Now())
	}
	if st := s.Router().Stats(); st.Workers != 0 {
		t.Fatalf("%d failed polls in a row kept the worker", pool.PollFailuresDown)
	}
}

// TestPredictionDiagnosis: the tracker's totals and accuracy, and one
// diagnosis per sustained gap, naming the cause: the engine's block size
// when it differs; a stale index when the router predicts more; when it
// predicts less, missing events if none of the worker's stores arrived,
// else different tokens or salts.
func TestPredictionDiagnosis(t *testing.T) {
	const bs = 16
	tr := newPredictionTracker()
	tr.sawStored(1)
	tr.sawStored(3)
	tr.sawStored(4)
	var causes []string
	feed := func(id uint64, n, pred, rep int, mismatch bool) {
		for range n {
			if c := tr.observe(id, pred, rep, bs, false, mismatch); c != "" {
				causes = append(causes, fmt.Sprintf("w%d:%s", id, c))
			}
		}
	}
	feed(1, gapWindow, 64, 64, false) // exact: no diagnosis
	feed(1, 3*gapWindow, 0, 64, false)
	feed(2, gapWindow, 0, 128, false)
	feed(3, gapWindow, 0, 64, true)
	feed(4, gapWindow, 128, 32, false)
	feed(1, gapWindow, 64, 64, false) // recovered
	feed(1, gapWindow, 0, 64, false)  // the same cause again, after recovery
	// Over-predicting for prompts the engine counts at another length:
	// the tokenizer, not a stale index.
	for range gapWindow {
		if c := tr.observe(5, 128, 32, bs, true, false); c != "" {
			causes = append(causes, "w5:"+c)
		}
	}
	want := "w1:hash_seed_salt_or_tokenizer w2:missing_events w3:block_size w4:missing_removals w1:hash_seed_salt_or_tokenizer w5:hash_seed_salt_or_tokenizer"
	if got := strings.Join(causes, " "); got != want {
		t.Errorf("diagnoses\n got %s\nwant %s", got, want)
	}
	p := tr.snapshot(1)
	b, _ := json.Marshal(p)
	if want := `{"requests":96,"predicted_cached_tokens":2048,"reported_cached_tokens":6144,"exact":32,"accuracy":0.3333333333333333,"over":0,"under":64,"diagnosis":"hash_seed_salt_or_tokenizer"}`; string(b) != want {
		t.Errorf("worker 1\n got %s\nwant %s", b, want)
	}
}

// TestPredictedVsReported: a proxied request's prediction (overlap x block
// size) and the engine's cached_tokens are exported and shown per worker
// in /debug/index.
func TestPredictedVsReported(t *testing.T) {
	s := newServerWith(t, false, nil)
	bs := s.cfg.Router.BlockSize
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", `{"id":"c1","object":"text_completion","created":7,"model":"m","choices":[{"index":0,"text":"x","finish_reason":null}]}`)
		fmt.Fprintf(w, "data: %s\n\n", `{"id":"c1","object":"text_completion","created":7,"model":"m","choices":[{"index":0,"text":"y","finish_reason":"length"}]}`)
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2,\"total_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":%d}}}\n\n", 3*bs, 3*bs+2, bs)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(eng.Close)
	if err := s.AddWorker(Worker{ID: 1, URL: eng.URL}); err != nil {
		t.Fatal(err)
	}
	toks := make([]uint32, 3*bs)
	for i := range toks {
		toks[i] = uint32(i + 1)
	}
	storeTokens(t, s, 1, toks[:2*bs])
	body, _ := json.Marshal(map[string]any{"prompt": toks, "max_tokens": 2})
	rec := do(t, s.Handler(), "POST", "/v1/completions", string(body))
	if rec.Code != 200 || rec.Header().Get(HeaderOverlap) != "2" {
		t.Fatalf("completion: %d overlap %q %s", rec.Code, rec.Header().Get(HeaderOverlap), rec.Body)
	}
	var one map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &one); err != nil {
		t.Fatal(err)
	}
	if one["object"] != "text_completion" || one["id"] != "c1" || one["choices"].([]any)[0].(map[string]any)["text"] != "xy" ||
		one["choices"].([]any)[0].(map[string]any)["finish_reason"] != "length" || one["usage"] == nil {
		t.Errorf("folded answer %s", rec.Body)
	}
	lines := metricLines(t, s)
	for _, want := range []string{
		fmt.Sprintf(`kvrouter_predicted_cached_tokens_total{worker="1"} %d`, 2*bs),
		fmt.Sprintf(`kvrouter_reported_cached_tokens_total{worker="1"} %d`, bs),
		"kvrouter_cached_tokens_prediction_error_count 1",
	} {
		if !hasMetric(lines, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	p := s.IndexSummaries().Workers[0].Prediction
	if p == nil || p.Requests != 1 || p.Predicted != 2*bs || p.Reported != bs || p.Over != 1 {
		t.Errorf("debug index prediction %+v", p)
	}
}

// TestDPRankHeader: a worker with several dp ranks gets the chosen rank
// in X-data-parallel-rank (vLLM's header); a single-rank worker none.
func TestDPRankHeader(t *testing.T) {
	s := newServerWith(t, false, nil)
	var got atomic.Value
	eng := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Values("X-data-parallel-rank"))
		writeJSON(w, 200, map[string]any{"choices": []map[string]any{{"text": "a"}}})
	}))
	t.Cleanup(eng.Close)
	if err := s.AddWorker(Worker{ID: 1, URL: eng.URL}); err != nil {
		t.Fatal(err)
	}
	do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","max_tokens":1}`)
	if v := got.Load().([]string); len(v) != 0 {
		t.Errorf("single-rank worker got rank header %v", v)
	}
	if err := s.AddWorker(Worker{ID: 1, URL: eng.URL, Info: router.WorkerInfo{DPSize: 4}}); err != nil {
		t.Fatal(err)
	}
	// Requests stay booked on their rank while the test runs (no free
	// between them is needed: each answer frees it), so ranks vary only
	// by the router's tie-break; every header must name a valid rank.
	seen := map[string]bool{}
	for range 8 {
		do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","max_tokens":1}`)
		v := got.Load().([]string)
		if len(v) != 1 {
			t.Fatalf("4-rank worker got rank header %v", v)
		}
		seen[v[0]] = true
	}
	if len(seen) == 0 {
		t.Fatal("no rank header seen")
	}
	for r := range seen {
		if r != "0" && r != "1" && r != "2" && r != "3" {
			t.Errorf("rank header %q out of range", r)
		}
	}
}

// TestFoldable: requests for log probabilities or an echo are not folded
// from a stream (forwarded as they are); others are.
func TestFoldable(t *testing.T) {
	for body, want := range map[string]bool{
		`{"prompt":"x"}`:                   true,
		`{"prompt":"x","logprobs":null}`:   true,
		`{"messages":[],"logprobs":false}`: true,
		`{"prompt":"x","logprobs":2}`:      false,
		`{"messages":[],"logprobs":true}`:  false,
		`{"messages":[],"top_logprobs":3}`: false,
		`{"prompt":"x","echo":true}`:       false,
		`not json`:                         false,
	} {
		var m map[string]json.RawMessage
		if got := json.Unmarshal([]byte(body), &m) == nil && foldable(m); got != want {
			t.Errorf("foldable(%s) = %v, want %v", body, got, want)
		}
	}
}
