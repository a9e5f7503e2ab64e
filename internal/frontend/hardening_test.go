package frontend

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/frontend/sink"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/tokenizer"
)

// TestMaxTokensBounded: max_tokens near 2^63 never reaches a worker (it
// made the mocker generate forever); with the model's context set, prompt
// plus max_tokens beyond it is vLLM's 400 context_length_exceeded.
func TestMaxTokensBounded(t *testing.T) {
	for _, ctxLen := range []int{0, 4096} {
		s := newServerWith(t, false, func(c *Config) {
			c.Router.Policy = router.PolicyRoundRobin
			c.Hardening.MaxModelLen = ctxLen
		})
		var hits atomic.Int64
		wk := fakeWorker(t, 0, &hits)
		if err := s.AddWorker(Worker{ID: 1, URL: wk.URL}); err != nil {
			t.Fatal(err)
		}
		bad := []string{"9223372036854775807", "9223372036854775000", "4611686018427387904", "16777217"}
		if ctxLen > 0 {
			bad = append(bad, "4096", "4095")
		}
		for _, mt := range bad {
			for path, body := range map[string]string{
				"/v1/completions":      `{"prompt":"hi there","stream":true,"max_tokens":` + mt + `}`,
				"/v1/chat/completions": `{"messages":[{"role":"user","content":"hi"}],"stream":true,"max_completion_tokens":` + mt + `}`,
			} {
				rec := do(t, s.Handler(), "POST", path, body)
				e, ok := oai.ParseError(rec.Code, rec.Body.Bytes())
				if rec.Code != 400 || !ok || e.Code != "context_length_exceeded" || e.Param != "max_tokens" {
					t.Errorf("context %d, %s max_tokens %s: %d %s", ctxLen, path, mt, rec.Code, rec.Body.String())
				}
			}
		}
		if hits.Load() != 0 {
			t.Errorf("context %d: %d requests reached the worker", ctxLen, hits.Load())
		}
		rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","stream":true,"max_tokens":100}`)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "[DONE]") {
			t.Errorf("context %d: ordinary request %d %s", ctxLen, rec.Code, rec.Body.String())
		}
	}
}

// doKey is do with a bearer key.
func doKey(t *testing.T, h http.Handler, key, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	h.ServeHTTP(rec, req)
	return rec
}

func trackRoute(t *testing.T, s *Server, key string) (string, int) {
	t.Helper()
	rec := doKey(t, s.Handler(), key, "POST", "/route", `{"prompt":"hello","track":true}`)
	var rr RouteResponse
	_ = json.Unmarshal(rec.Body.Bytes(), &rr)
	return rr.RequestID, rec.Code
}

// TestBookingsBoundToCaller: tracked /route bookings have unguessable ids,
// only their caller's key drives them, a proxied stream's booking is out
// of reach of the lifecycle endpoints, each key holds at most
// MaxTrackedPerKey, and an unfreed booking expires after BookingTTL.
func TestBookingsBoundToCaller(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) {
		c.Router.Policy = router.PolicyRoundRobin
		c.APIKeys = []string{"k1", "k2"}
		c.Hardening.MaxTrackedPerKey = 2
		c.Hardening.BookingTTL = time.Hour
	})
	release := make(chan struct{})
	var streaming atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		w.(http.Flusher).Flush()
		streaming.Add(1)
		<-release
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer slow.Close()
	var once sync.Once
	rel := func() { once.Do(func() { close(release) }) }
	defer rel() // before slow.Close: a failed test must not leave its handler blocked
	if err := s.AddWorker(Worker{ID: 1, URL: slow.URL}); err != nil {
		t.Fatal(err)
	}
	a, code := trackRoute(t, s, "k1")
	b, code2 := trackRoute(t, s, "k1")
	if code != 200 || code2 != 200 || len(a) < 32 || a == b {
		t.Fatalf("tracked ids %q %q (%d %d): want two distinct random ids", a, b, code, code2)
	}
	if _, code := trackRoute(t, s, "k1"); code != 429 {
		t.Errorf("third tracked booking of k1: %d, want 429", code)
	}
	if _, code := trackRoute(t, s, "k2"); code != 200 {
		t.Errorf("k2 locked out by k1's bookings: %d", code)
	}
	if rec := doKey(t, s.Handler(), "k2", "POST", "/route/"+a+"/free", ""); rec.Code != 404 {
		t.Errorf("k2 freed k1's booking: %d", rec.Code)
	}
	if rec := doKey(t, s.Handler(), "k2", "POST", "/route/"+a+"/prefill_done", ""); rec.Code != 404 {
		t.Errorf("k2 drove k1's booking: %d", rec.Code)
	}
	if st := s.Router().Stats(); st.Active != 3 {
		t.Fatalf("active %d, want 3 tracked", st.Active)
	}
	// A live proxied stream: its (sequential) id cannot be released.
	done := make(chan int)
	go func() {
		done <- doKey(t, s.Handler(), "k2", "POST", "/v1/completions", `{"prompt":"x","stream":true}`).Code
	}()
	waitFor(t, "the stream in flight", func() bool { return streaming.Load() == 1 })
	for seq := 1; seq <= 8; seq++ {
		id := s.prefix + "-" + strconv.Itoa(seq)
		if rec := doKey(t, s.Handler(), "k2", "POST", "/route/"+id+"/free", ""); rec.Code != 404 {
			t.Errorf("freed %s: %d", id, rec.Code)
		}
	}
	if st := s.Router().Stats(); st.Active != 4 {
		t.Errorf("active %d, want 3 tracked + the stream", st.Active)
	}
	rel()
	if c := <-done; c != 200 {
		t.Errorf("stream: %d", c)
	}
	if rec := doKey(t, s.Handler(), "k1", "POST", "/route/"+a+"/free", ""); rec.Code != 200 {
		t.Errorf("k1 free: %d %s", rec.Code, rec.Body)
	}
	if _, code := trackRoute(t, s, "k1"); code != 200 {
		t.Errorf("k1 after a free: %d, want a slot back", code)
	}
	if !strings.Contains(strings.Join(metricLines(t, s), "\n"), `kvrouter_requests_total{code="404",endpoint="route_free"}`) {
		t.Error("lifecycle calls not counted in kvrouter_requests_total")
	}
}

// TestBookingTTL: a tracked booking nobody frees is released after
// BookingTTL (the default is short: 30 s, not the stale limit's minutes).
func TestBookingTTL(t *testing.T) {
	if d := DefaultConfig().Hardening.BookingTTL; d != 30*time.Second {
		t.Errorf("default booking TTL %v", d)
	}
	s := newServerWith(t, false, func(c *Config) { c.Hardening.BookingTTL = 20 * time.Millisecond })
	if err := s.AddWorker(Worker{ID: 1, URL: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, code := trackRoute(t, s, ""); code != 200 {
			t.Fatal(code)
		}
	}
	waitFor(t, "tracked bookings expire", func() bool { return s.Router().Stats().Active == 0 })
}

func waitFor(t *testing.T, what string, cond func() bool) {
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

// gateTok wraps a tokenizer: counts calls and, while gate is open (non-nil),
// blocks each encoding until gate is closed.
type gateTok struct {
	tokenizer.Tokenizer
	calls  atomic.Int64
	closed atomic.Bool // gate in use
	gate   chan struct{}
}

func (g *gateTok) Encode(ctx context.Context, p string) ([]uint32, error) {
	g.calls.Add(1)
	if g.closed.Load() {
		<-g.gate
	}
	return g.Tokenizer.Encode(ctx, p)
}

// TestTokenizationBounded: a text beyond the byte budget derived from
// MaxPromptTokens is refused before the tokenizer runs; at most Tokenizers
// encode at once, TokenizeQueue wait, the next is a 529.
func TestTokenizationBounded(t *testing.T) {
	var gt *gateTok
	s := newServerWith(t, false, func(c *Config) {
		gt = &gateTok{Tokenizer: c.Tokenizer, gate: make(chan struct{})}
		c.Tokenizer = gt
		c.Router.Policy = router.PolicyRoundRobin
		c.MaxPromptTokens = 10
		c.Hardening.Tokenizers, c.Hardening.TokenizeQueue = 1, 1
	})
	var hits atomic.Int64
	wk := fakeWorker(t, 0, &hits)
	if err := s.AddWorker(Worker{ID: 1, URL: wk.URL}); err != nil {
		t.Fatal(err)
	}
	big := `{"prompt":"` + strings.Repeat("a", 10*32+1) + `"}`
	for _, path := range []string{"/v1/completions", "/route"} {
		rec := do(t, s.Handler(), "POST", path, big)
		if e, ok := oai.ParseError(rec.Code, rec.Body.Bytes()); rec.Code != 400 || !ok || e.Code != "context_length_exceeded" {
			t.Errorf("%s: prompt over the byte budget: %d %s", path, rec.Code, rec.Body.String())
		}
	}
	if n := gt.calls.Load(); n != 0 {
		t.Errorf("the tokenizer ran %d times on prompts over the byte budget", n)
	}
	gt.closed.Store(true)
	codes := make(chan int, 2)
	for range 2 {
		go func() { codes <- do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","stream":true}`).Code }()
	}
	waitFor(t, "one tokenizing, one waiting", func() bool { return gt.calls.Load() == 1 && queueLen(s) == 2 })
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi"}`); rec.Code != 529 {
		t.Errorf("third concurrent tokenization: %d, want 529", rec.Code)
	}
	close(gt.gate)
	for range 2 {
		if c := <-codes; c != 200 {
			t.Errorf("queued tokenization: %d", c)
		}
	}
}

// TestSmallInputChecks: a wrong method on a known path is a 405 with
// Allow; temperature of the wrong type, over-nested prompt lists and an
// unbounded priority are 400s.
func TestSmallInputChecks(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.Router.Policy = router.PolicyRoundRobin })
	var hits atomic.Int64
	wk := fakeWorker(t, 0, &hits)
	if err := s.AddWorker(Worker{ID: 1, URL: wk.URL}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/v1/models", "GET, HEAD"},
		{"GET", "/v1/completions", "POST"},
		{"DELETE", "/route", "POST"},
		{"PUT", "/metrics", "GET, HEAD"},
	} {
		rec := do(t, s.Handler(), tc.method, tc.path, "")
		if rec.Code != 405 || rec.Header().Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d Allow %q, want 405 %q", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), tc.allow)
		}
	}
	if rec := do(t, s.Handler(), "GET", "/nope", ""); rec.Code != 404 {
		t.Errorf("unknown path: %d", rec.Code)
	}
	for _, body := range []string{
		`{"prompt":"x","temperature":"hot"}`,
		`{"prompt":"x","temperature":[1]}`,
		`{"prompt":"x","temperature":-1}`,
		`{"prompt":[[[1]]]}`,
		`{"prompt":[["x"]]}`,
		`{"prompt":` + strings.Repeat("[", 1<<20) + `}`,
	} {
		if rec := do(t, s.Handler(), "POST", "/v1/completions", body); rec.Code != 400 {
			t.Errorf("%.60s: %d, want 400", body, rec.Code)
		}
	}
	if rec := do(t, s.Handler(), "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temperature":"0.5"}`); rec.Code != 400 {
		t.Errorf("chat temperature string: %d", rec.Code)
	}
	for _, p := range []string{"1e300", "-1e7", "Inf", "NaN"} {
		req := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(`{"prompt":"x"}`))
		req.Header.Set(HeaderPriority, p)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != 400 {
			t.Errorf("priority %s: %d", p, rec.Code)
		}
	}
	if rec := do(t, s.Handler(), "POST", "/route", `{"prompt":"x","priority":1e300}`); rec.Code != 400 {
		t.Errorf("/route priority 1e300: %d", rec.Code)
	}
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"x","temperature":0.5,"stream":true}`); rec.Code != 200 {
		t.Errorf("a good request: %d %s", rec.Code, rec.Body.String())
	}
}

// TestRuntimeMetricsAuthAndPprof: /metrics exports go_* and process_*;
// with MetricsAuth it takes the admin key; pprof is off by default and
// behind the admin key when on.
func TestRuntimeMetricsAuthAndPprof(t *testing.T) {
	open := newServerWith(t, false, nil)
	body := do(t, open.Handler(), "GET", "/metrics", "").Body.String()
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes"} {
		if !strings.Contains(body, "\n"+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if rec := do(t, open.Handler(), "GET", "/debug/pprof/", ""); rec.Code == 200 {
		t.Error("pprof served without --pprof")
	}
	s := newServerWith(t, false, func(c *Config) {
		c.AdminKeys = []string{"adm"}
		c.Hardening.MetricsAuth, c.Hardening.Pprof = true, true
	})
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/cmdline"} {
		if rec := doKey(t, s.Handler(), "", "GET", path, ""); rec.Code != 401 {
			t.Errorf("%s without a key: %d", path, rec.Code)
		}
		if rec := doKey(t, s.Handler(), "adm", "GET", path, ""); rec.Code != 200 {
			t.Errorf("%s with the admin key: %d", path, rec.Code)
		}
	}
}

// TestEventsBeyondDPSizeIgnored: a registered worker's event for a rank
// beyond its dp size is refused and counted; its ranks below are applied.
func TestEventsBeyondDPSizeIgnored(t *testing.T) {
	s := newServerWith(t, false, nil)
	if err := s.AddWorker(Worker{ID: 4, URL: "http://127.0.0.1:1", Info: router.WorkerInfo{DPSize: 2}}); err != nil {
		t.Fatal(err)
	}
	for rank, want := range map[uint32]bool{0: true, 1: true, 2: false, 1 << 31: false} {
		ev := kvevents.Event{WorkerID: 4, DPRank: rank, EventID: 1, Kind: kvevents.KindStored,
			Blocks: []kvevents.Block{{Hash: uint64(100 + rank), Local: uint64(100 + rank)}}}
		if err := s.Apply(&ev); (err == nil) != want {
			t.Errorf("rank %d: %v", rank, err)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, x := range s.IndexSummaries().Workers {
		if x.DPRank >= 2 && x.Total > 0 {
			t.Errorf("index holds rank %d of a dp-2 worker", x.DPRank)
		}
	}
	if !strings.Contains(strings.Join(metricLines(t, s), "\n"), `kvrouter_events_rejected_total{reason="dp_rank"} 2`) {
		t.Error("rank refusals not counted")
	}
}

// TestApplyRecovers: a panic below Apply (forced here by a server without
// its router) is an error and a counted rejection, not a dead process.
func TestApplyRecovers(t *testing.T) {
	s := newServerWith(t, false, nil)
	s.sink.Attach(nil, sink.RanksFunc(s.pool.DPSize)) // any call into the router now panics
	ev := kvevents.Event{WorkerID: 1, EventID: 1, Kind: kvevents.KindCleared}
	if err := s.Apply(&ev); !errors.Is(err, ErrApplyPanic) {
		t.Fatalf("Apply = %v, want ErrApplyPanic", err)
	}
}
