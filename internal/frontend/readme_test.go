package frontend

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// The tests in this file show the claims about the frontend that README.md
// and docs/operations.md make (headers, forwarded bodies, /route tracking,
// metrics, workers coming back, session and priority headers) on loopback
// fake workers; docs/CLAIMS.md maps each claim to its test.

// newServerWith is newServer with a config hook; run also starts Run (the
// load poller, the queue's release loop and the sweeper).
func newServerWith(t testing.TB, run bool, mod func(*Config)) *Server {
	t.Helper()
	tok, err := tokenizer.Default(tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Tokenizer, cfg.Seed = tok, 1
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = s.RunIndex(ctx) }()
	if run {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Run(ctx) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

// recWorker is a fake engine that records the last body per path and
// answers completions with JSON (or SSE when asked to stream), GET
// /metrics (vLLM's names, kvUsage) and GET /health while loadOK, and POST
// /tokenize with the built-in tokenizer (the router's in newServerWith).
type recWorker struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   map[string][]byte
	loadOK   atomic.Bool
	broken   atomic.Bool // hijack and close every /v1 request (unreachable)
	loadHits atomic.Int64
}

func newRecWorker(t *testing.T, id uint64, kvUsage float64) *recWorker {
	t.Helper()
	w := &recWorker{bodies: map[string][]byte{}}
	w.loadOK.Store(true)
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" || r.URL.Path == "/health" {
			w.loadHits.Add(1)
			if !w.loadOK.Load() {
				http.Error(rw, "starting", http.StatusServiceUnavailable)
				return
			}
			if r.URL.Path == "/metrics" {
				fmt.Fprintf(rw, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} %g\n"+
					"# TYPE kvrouter_mocker_active_prefill_tokens gauge\nkvrouter_mocker_active_prefill_tokens 7\n", kvUsage)
			}
			return
		}
		if r.URL.Path == "/tokenize" {
			serveTokenize(rw, r, builtin(t), nil)
			return
		}
		if w.broken.Load() {
			c, _, err := rw.(http.Hijacker).Hijack()
			if err == nil {
				_ = c.Close()
			}
			return
		}
		b, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.bodies[r.URL.Path] = b
		w.mu.Unlock()
		if strings.Contains(string(b), `"stream":true`) {
			rw.Header().Set("Content-Type", "text/event-stream")
			for _, d := range []string{`{"choices":[{"text":"a"}]}`, `[DONE]`} {
				_, _ = io.WriteString(rw, "data: "+d+"\n\n")
				rw.(http.Flusher).Flush()
			}
			return
		}
		writeJSON(rw, 200, map[string]any{"choices": []map[string]any{{"text": "a"}}})
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *recWorker) body(path string) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bodies[path]
}

// waitUntil polls cond every 2ms until it holds or 10s pass.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		case <-tick.C:
		}
	}
}

// storeTokens applies a Stored event of toks' full blocks on worker w.
func storeTokens(t *testing.T, s *Server, w uint64, toks []uint32) int {
	t.Helper()
	bs := s.cfg.Router.BlockSize
	locals := kvhash.LocalHashes(toks, bs, kvhash.Seed("", ""))
	seq := kvhash.SeqHashes(locals)
	ev := kvevents.Event{WorkerID: w, EventID: 1, Kind: kvevents.KindStored}
	for i := range locals {
		ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: seq[i], Local: locals[i]})
	}
	if err := s.Apply(&ev); err != nil {
		t.Fatal(err)
	}
	// The sticky writers apply it asynchronously.
	waitUntil(t, "stored blocks in the index", func() bool {
		for _, ws := range s.IndexSummaries().Workers {
			if ws.Worker == w && ws.Total >= len(locals) {
				return true
			}
		}
		return false
	})
	return len(locals)
}

// TestResponseHeadersAndForwardedBody: the x-kvrouter-* response headers
// carry the worker, the overlap the router found and its cached tokens;
// a text completion prompt is forwarded as the token ids the router hashed
// to a worker whose tokenizer self-test matched (the default with the
// model's own tokenizer; selftest_test.go has the other cases), or as
// text with ForwardTokens off; streaming chat bodies
// are forwarded unchanged, non-streaming ones streamed from the engine
// (stream, stream_options.include_usage) and answered as one JSON body.
func TestResponseHeadersAndForwardedBody(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.OwnTokenizer = true })
	w := newRecWorker(t, 1, 0)
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	if res := selfTestNow(t, s, 1); res.Outcome != SelfTestMatch || !res.ForwardIDs {
		t.Fatalf("self-test %+v, want a match that forwards ids", res)
	}
	text := strings.Repeat("KV-cache-aware routing sends each request where its prefix is cached. ", 20)
	toks, err := s.cfg.Tokenizer.Encode(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	blocks := storeTokens(t, s, 1, toks)
	if blocks < 2 {
		t.Fatalf("prompt of %d tokens has %d blocks; want a longer prompt", len(toks), blocks)
	}
	body, _ := json.Marshal(map[string]any{"prompt": text, "max_tokens": 1})
	rec := do(t, s.Handler(), "POST", "/v1/completions", string(body))
	if rec.Code != 200 {
		t.Fatalf("completion: %d %s", rec.Code, rec.Body)
	}
	h := rec.Header()
	if h.Get("x-kvrouter-worker") != "1" || h.Get("x-kvrouter-overlap-blocks") != strconv.Itoa(blocks) ||
		h.Get("x-kvrouter-cached-tokens") != strconv.Itoa(blocks*s.cfg.Router.BlockSize) {
		t.Errorf("headers worker %q overlap %q cached %q, want 1, %d, %d", h.Get("x-kvrouter-worker"),
			h.Get("x-kvrouter-overlap-blocks"), h.Get("x-kvrouter-cached-tokens"), blocks, blocks*s.cfg.Router.BlockSize)
	}
	var fwd struct {
		Prompt    []uint32 `json:"prompt"`
		MaxTokens int      `json:"max_tokens"`
	}
	if err := json.Unmarshal(w.body("/v1/completions"), &fwd); err != nil {
		t.Fatalf("forwarded body %s: %v", w.body("/v1/completions"), err)
	}
	if len(fwd.Prompt) != len(toks) || fwd.Prompt[0] != toks[0] || fwd.Prompt[len(toks)-1] != toks[len(toks)-1] || fwd.MaxTokens != 1 {
		t.Errorf("forwarded prompt %d ids (max_tokens %d), want the %d ids the router hashed", len(fwd.Prompt), fwd.MaxTokens, len(toks))
	}

	chat := `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true,"custom_field":{"kept":true}}`
	if rec := do(t, s.Handler(), "POST", "/v1/chat/completions", chat); rec.Code != 200 {
		t.Fatalf("chat: %d %s", rec.Code, rec.Body)
	}
	if got := string(w.body("/v1/chat/completions")); got != chat {
		t.Errorf("chat body forwarded as %s, want unchanged %s", got, chat)
	}
	// A non-streaming chat is streamed from the engine with usage, the
	// rest of the body kept; the client gets one chat.completion object.
	rec = do(t, s.Handler(), "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"custom_field":{"kept":true}}`)
	var one struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Role, Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &one); rec.Code != 200 || err != nil || one.Object != "chat.completion" ||
		len(one.Choices) != 1 || one.Choices[0].Message.Content != "a" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("non-streaming chat answered %d %q %s (%v), want one chat.completion with content \"a\"", rec.Code, rec.Header().Get("Content-Type"), rec.Body, err)
	}
	if got, want := string(w.body("/v1/chat/completions")), `{"custom_field":{"kept":true},"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`; got != want {
		t.Errorf("non-streaming chat forwarded as %s, want %s", got, want)
	}

	st := newServerWith(t, false, func(c *Config) { c.ForwardTokens, c.OwnTokenizer = false, true })
	if err := st.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	if res := selfTestNow(t, st, 1); res.Outcome != SelfTestMatch || res.ForwardIDs {
		t.Fatalf("self-test %+v, want a match that forwards no ids", res)
	}
	if rec := do(t, st.Handler(), "POST", "/v1/completions", `{"prompt":"as text","max_tokens":1}`); rec.Code != 200 {
		t.Fatalf("completion: %d %s", rec.Code, rec.Body)
	}
	var txt struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(w.body("/v1/completions"), &txt); err != nil || txt.Prompt != "as text" {
		t.Errorf("ForwardTokens off forwarded %s (%v), want the text", w.body("/v1/completions"), err)
	}
}

// TestRouteTrackLifecycle: POST /route answers every candidate's cost
// breakdown; with "track":true the load stays booked until
// /route/{id}/prefill_done and /route/{id}/free.
func TestRouteTrackLifecycle(t *testing.T) {
	s := newServerWith(t, false, nil)
	for id := uint64(1); id <= 2; id++ {
		if err := s.AddWorker(Worker{ID: id, URL: "http://127.0.0.1:1"}); err != nil {
			t.Fatal(err)
		}
	}
	rec := do(t, s.Handler(), "POST", "/route", `{"prompt":"hello","track":true}`)
	if rec.Code != 200 {
		t.Fatalf("/route: %d %s", rec.Code, rec.Body)
	}
	var raw struct {
		RequestID  string           `json:"request_id"`
		Worker     uint64           `json:"worker_id"`
		Tracked    bool             `json:"tracked"`
		Candidates []map[string]any `json:"candidates"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Worker == 0 || !raw.Tracked || len(raw.Candidates) != 2 {
		t.Fatalf("/route answer %s", rec.Body)
	}
	for _, c := range raw.Candidates {
		for _, k := range []string{"worker_id", "overlap_blocks", "credit", "prefill_blocks", "decode_blocks", "cost", "probability"} {
			if _, ok := c[k]; !ok {
				t.Errorf("candidate lacks %q: %v", k, c)
			}
		}
	}
	if st := s.Router().Stats(); st.Active != 1 {
		t.Fatalf("tracked decision: %d active, want 1", st.Active)
	}
	if rec := do(t, s.Handler(), "POST", "/route/"+raw.RequestID+"/prefill_done", ""); rec.Code != 200 {
		t.Fatalf("prefill_done: %d %s", rec.Code, rec.Body)
	}
	if st := s.Router().Stats(); st.Active != 1 {
		t.Fatalf("after prefill_done: %d active, want 1 (decode still booked)", st.Active)
	}
	if rec := do(t, s.Handler(), "POST", "/route/"+raw.RequestID+"/free", ""); rec.Code != 200 {
		t.Fatalf("free: %d %s", rec.Code, rec.Body)
	}
	if st := s.Router().Stats(); st.Active != 0 {
		t.Fatalf("after free: %d active, want 0", st.Active)
	}
	if rec := do(t, s.Handler(), "POST", "/route/"+raw.RequestID+"/free", ""); rec.Code != 404 {
		t.Errorf("second free: %d, want 404", rec.Code)
	}
}

// metricLines returns GET /metrics lines starting with kvrouter_.
func metricLines(t *testing.T, s *Server) []string {
	t.Helper()
	rec := do(t, s.Handler(), "GET", "/metrics", "")
	var out []string
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "kvrouter_") {
			out = append(out, sc.Text())
		}
	}
	return out
}

func hasMetric(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// TestMetricsREADME: GET /metrics exports the series README.md
// ("Metrics") and docs/operations.md list:
// decisions per worker, overlap and prompt blocks, cost, TTFT, queue
// depth, event lag, index size per tier, rejected events by reason and
// the KV usage each worker reports at GET /metrics (vLLM's gauge).
func TestMetricsREADME(t *testing.T) {
	s := newServerWith(t, true, func(c *Config) { c.LoadPollInterval = 5 * time.Millisecond })
	w := newRecWorker(t, 1, 0.25)
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	storeTokens(t, s, 1, make([]uint32, 2*s.cfg.Router.BlockSize))
	orphan := kvevents.Event{WorkerID: 1, EventID: 2, Kind: kvevents.KindStored, HasParent: true, Parent: 424242,
		Blocks: []kvevents.Block{{Hash: 7, Local: 8}}}
	_ = s.Apply(&orphan) // refused: unknown parent
	s.ObservePublished(time.Now(), 1)
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","stream":true,"max_tokens":1}`); rec.Code != 200 {
		t.Fatalf("completion: %d %s", rec.Code, rec.Body)
	}
	waitUntil(t, "worker KV usage polled from /metrics and the orphan event refused", func() bool {
		l := metricLines(t, s)
		return hasMetric(l, `kvrouter_worker_kv_usage{worker="1"} 0.25`) && hasMetric(l, "kvrouter_events_rejected_total")
	})
	lines := metricLines(t, s)
	for _, want := range []string{
		`kvrouter_route_decisions_total{worker="1"} 1`,
		"kvrouter_overlap_blocks_total",
		"kvrouter_prompt_blocks_total",
		"kvrouter_route_overlap_blocks_count 1",
		"kvrouter_route_cost_count 1",
		"kvrouter_ttft_seconds_count 1",
		"kvrouter_queue_depth 0",
		"kvrouter_event_lag_seconds_count",
		`kvrouter_index_blocks{tier="device"} 2`,
		`kvrouter_events_rejected_total{reason="unknown_parent"} 1`,
	} {
		if !hasMetric(lines, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

// TestUnreachableWorkerComesBack: a worker whose connection fails is taken
// out of routing (index entries dropped), stays out while its GET /health
// probes fail, and is back in routing once /health answers again.
func TestUnreachableWorkerComesBack(t *testing.T) {
	s := newServerWith(t, true, func(c *Config) { c.LoadPollInterval = 5 * time.Millisecond })
	w := newRecWorker(t, 1, 0)
	if err := s.AddWorker(Worker{ID: 1, URL: w.URL}); err != nil {
		t.Fatal(err)
	}
	storeTokens(t, s, 1, make([]uint32, s.cfg.Router.BlockSize))
	w.broken.Store(true)
	w.loadOK.Store(false)
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi"}`); rec.Code < 500 {
		t.Fatalf("unreachable worker: %d %s", rec.Code, rec.Body)
	}
	if st := s.Router().Stats(); st.Workers != 0 {
		t.Fatalf("unreachable worker still routed: %+v", st)
	}
	// Three more failed probes: still out.
	hits := w.loadHits.Load()
	waitUntil(t, "three /health probes", func() bool { return w.loadHits.Load() >= hits+3 })
	rep := s.IndexSummaries()
	if st := s.Router().Stats(); st.Workers != 0 || len(rep.Workers) != 1 || !rep.Workers[0].Down || rep.Workers[0].Total != 0 {
		t.Fatalf("worker with failing /health: stats %+v index %+v", st, rep.Workers)
	}
	w.broken.Store(false)
	w.loadOK.Store(true)
	waitUntil(t, "worker back in routing", func() bool { return s.Router().Stats().Workers == 1 })
	rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi"}`)
	if rec.Code != 200 || rec.Header().Get(HeaderWorker) != "1" {
		t.Fatalf("after /health answered: %d worker %q", rec.Code, rec.Header().Get(HeaderWorker))
	}
}

// TestSessionAndPriorityHeaders: with session affinity on, requests with
// the same x-session-id go to the same worker even under round-robin; a
// priority header that is not a number is a 400.
func TestSessionAndPriorityHeaders(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.Router.Affinity.Enabled = true
	})
	w1, w2 := newRecWorker(t, 1, 0), newRecWorker(t, 2, 0)
	for id, w := range map[uint64]*recWorker{1: w1, 2: w2} {
		if err := s.AddWorker(Worker{ID: id, URL: w.URL}); err != nil {
			t.Fatal(err)
		}
	}
	send := func(session, prio string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"prompt":"hi","max_tokens":1}`))
		if session != "" {
			req.Header.Set("x-session-id", session)
		}
		if prio != "" {
			req.Header.Set("x-kvrouter-priority", prio)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	var plain []string
	for range 4 {
		plain = append(plain, send("", "").Header().Get(HeaderWorker))
	}
	if plain[0] == plain[1] {
		t.Fatalf("round-robin without a session: %v", plain)
	}
	first := send("s-1", "").Header().Get(HeaderWorker)
	for i := range 4 {
		if got := send("s-1", "").Header().Get(HeaderWorker); got != first {
			t.Fatalf("session request %d went to worker %s, the session's first to %s", i, got, first)
		}
	}
	if rec := send("", "2.5"); rec.Code != 200 {
		t.Errorf("numeric priority: %d %s", rec.Code, rec.Body)
	}
	if rec := send("", "high"); rec.Code != 400 {
		t.Errorf("priority %q: %d, want 400", "high", rec.Code)
	}
}

// TestDefaultsREADME: the frontend defaults README.md and docs/operations.md
// state: retries 2, engine /metrics polled every 250 ms, text prompts
// forwarded as token ids.
func TestDefaultsREADME(t *testing.T) {
	c := DefaultConfig()
	if c.Retries != 2 || c.LoadPollInterval != 250*time.Millisecond || !c.ForwardTokens {
		t.Errorf("defaults retries %d poll %v forward tokens %v, want 2, 250ms, true", c.Retries, c.LoadPollInterval, c.ForwardTokens)
	}
}
