package frontend

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/tokenizer"
)

var builtinTok = sync.OnceValues(func() (*tokenizer.Local, error) { return tokenizer.Default(tokenizer.Options{}) })

func builtin(t testing.TB) tokenizer.Tokenizer {
	t.Helper()
	tok, err := builtinTok()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// serveTokenize answers a vLLM-shaped POST /tokenize with tok's ids
// ({"prompt"} or {"messages","add_generation_prompt"}); alter, when set,
// edits them.
func serveTokenize(w http.ResponseWriter, r *http.Request, tok tokenizer.Tokenizer, alter func([]uint32) []uint32) {
	var req struct {
		Prompt              *string             `json:"prompt"`
		Messages            []tokenizer.Message `json:"messages"`
		AddGenerationPrompt *bool               `json:"add_generation_prompt"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ids []uint32
	var err error
	switch {
	case req.Messages != nil:
		ids, err = tok.EncodeChat(r.Context(), req.Messages, req.AddGenerationPrompt == nil || *req.AddGenerationPrompt)
	case req.Prompt != nil:
		ids, err = tok.Encode(r.Context(), *req.Prompt)
	default:
		err = fmt.Errorf("no prompt")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if alter != nil {
		ids = alter(ids)
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": 4096, "tokens": ids})
}

// selfTestNow runs worker id's self-test at once, as the poller does.
func selfTestNow(t *testing.T, s *Server, id uint64) SelfTest {
	t.Helper()
	res, ok := s.pool.RunSelfTest(context.Background(), id, time.Now())
	if !ok {
		t.Fatalf("worker %d: no self-test due", id)
	}
	return res
}

// tokEngine is a fake engine for the self-test: GET /metrics (with a
// process_start_time_seconds), GET /health, POST /tokenize as mode says,
// and completions whose bodies it records.
type tokEngine struct {
	*httptest.Server
	mode  atomic.Value // string: match, mismatch, none (404), down (503), sglang (no chat)
	start atomic.Int64 // process_start_time_seconds
	mu    sync.Mutex
	body  []byte
	hits  atomic.Int64 // /tokenize requests
}

func newTokEngine(t *testing.T, mode string) *tokEngine {
	t.Helper()
	e := &tokEngine{}
	e.mode.Store(mode)
	e.start.Store(1700000000)
	tok := builtin(t)
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			return
		case "/metrics":
			fmt.Fprintf(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\"} 0\n"+
				"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %d\n", e.start.Load())
			return
		case "/tokenize":
			e.hits.Add(1)
			switch e.mode.Load().(string) {
			case "none":
				http.NotFound(w, r)
			case "down":
				http.Error(w, "loading", http.StatusServiceUnavailable)
			case "mismatch":
				serveTokenize(w, r, tok, func(ids []uint32) []uint32 {
					if len(ids) > 3 {
						ids[3]++ // another vocabulary from the fourth token on
					}
					return ids
				})
			case "sglang":
				b, _ := io.ReadAll(r.Body)
				if bytes.Contains(b, []byte(`"messages"`)) {
					http.Error(w, `{"detail":"prompt: field required"}`, http.StatusUnprocessableEntity)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
				serveTokenize(w, r, tok, nil)
			default:
				serveTokenize(w, r, tok, nil)
			}
			return
		}
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.body = b
		e.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"choices":[{"text":"a"}]}`, `[DONE]`} {
			_, _ = io.WriteString(w, "data: "+d+"\n\n")
		}
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *tokEngine) last() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.body
}

// logBuf is a log sink safe for the server's goroutines.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) lines(sub string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ln := range strings.Split(l.b.String(), "\n") {
		if strings.Contains(ln, sub) {
			out = append(out, ln)
		}
	}
	return out
}

// waitOutcome waits until worker id's self-test outcome is want.
func waitOutcome(t *testing.T, s *Server, id uint64, want string) SelfTest {
	t.Helper()
	var res SelfTest
	waitUntil(t, fmt.Sprintf("worker %d's self-test outcome %s", id, want), func() bool {
		res = s.pool.SelfTest(id)
		return res.Outcome == want
	})
	return res
}

// TestSelfTestOutcomes: with the model's own tokenizer, the poller
// self-tests each worker on joining: an engine tokenizing like the router
// matches and gets a completion's text prompt as token ids; one that
// differs (from the fourth token on) is a mismatch, logged once with the
// worker, model and position, and gets the client's text; one without
// /tokenize is unavailable and gets the text; an SGLang-like one whose
// /tokenize takes no chat messages matches on the other canaries. Each
// outcome is counted (kvrouter_tokenizer_selftest_total) and shown in
// GET /debug/index. Old code sent every worker the ids.
func TestSelfTestOutcomes(t *testing.T) {
	var logs logBuf
	s := newServerWith(t, true, func(c *Config) {
		c.OwnTokenizer = true
		c.Model = "m1"
		c.LoadPollInterval = 5 * time.Millisecond
		c.Router.Policy = router.PolicyRoundRobin
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	modes := map[uint64]string{1: "match", 2: "mismatch", 3: "none", 4: "sglang"}
	engines := map[uint64]*tokEngine{}
	for id := uint64(1); id <= 4; id++ {
		engines[id] = newTokEngine(t, modes[id])
		if err := s.AddWorker(Worker{ID: id, URL: engines[id].URL}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[uint64]string{1: SelfTestMatch, 2: SelfTestMismatch, 3: SelfTestUnavailable, 4: SelfTestMatch}
	for id, o := range want {
		waitOutcome(t, s, id, o)
	}
	if res := s.pool.SelfTest(2); res.Mismatch == nil || *res.Mismatch != (Mismatch{Canary: "text", Position: 3,
		RouterToken: res.Mismatch.RouterToken, EngineToken: res.Mismatch.RouterToken + 1}) || res.ForwardIDs {
		t.Errorf("mismatch %+v %+v, want canary text at position 3, engine token = router token + 1, no ids", res, res.Mismatch)
	}
	if res := s.pool.SelfTest(4); res.Canaries != 2 || len(res.Skipped) != 1 || !strings.HasPrefix(res.Skipped[0], "chat: engine:") {
		t.Errorf("sglang-like: %+v, want 2 canaries compared, chat skipped", res)
	}
	if ls := logs.lines("tokenizer self-test mismatch"); len(ls) != 1 || !strings.Contains(ls[0], "worker=2") ||
		!strings.Contains(ls[0], "model=m1") || !strings.Contains(ls[0], "position=3") {
		t.Errorf("mismatch log lines %q, want one naming worker 2, model m1, position 3", ls)
	}
	for id, o := range want {
		if n := metricValue(t, s, fmt.Sprintf(`kvrouter_tokenizer_selftest_total{outcome=%q,worker="%d"}`, o, id)); n != 1 {
			t.Errorf("kvrouter_tokenizer_selftest_total{worker=%d,outcome=%s} = %v, want 1", id, o, n)
		}
	}
	rec := do(t, s.Handler(), "GET", "/debug/index", "")
	var rep IndexReport
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, w := range rep.Workers {
		if w.Tokenizer == nil || w.Tokenizer.Outcome != want[w.Worker] || w.Tokenizer.ForwardIDs != (want[w.Worker] == SelfTestMatch) {
			t.Errorf("/debug/index worker %d tokenizer %+v, want %s", w.Worker, w.Tokenizer, want[w.Worker])
		}
	}

	const text = "Route this prompt by its blocks, and forward it as the engine expects."
	ids, err := builtin(t).Encode(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"prompt": text, "max_tokens": 1, "stream": true})
	for i := 0; i < 40 && slices.ContainsFunc([]uint64{1, 2, 3, 4}, func(id uint64) bool { return engines[id].last() == nil }); i++ {
		if rec := do(t, s.Handler(), "POST", "/v1/completions", string(body)); rec.Code != 200 {
			t.Fatalf("completion: %d %s", rec.Code, rec.Body)
		}
	}
	for id, e := range engines {
		var fwd struct {
			Prompt json.RawMessage `json:"prompt"`
		}
		if err := json.Unmarshal(e.last(), &fwd); err != nil {
			t.Fatalf("worker %d got %s: %v", id, e.last(), err)
		}
		wantPrompt, _ := json.Marshal(text)
		if want[id] == SelfTestMatch {
			wantPrompt, _ = json.Marshal(ids)
		}
		if !bytes.Equal(fwd.Prompt, wantPrompt) {
			t.Errorf("worker %d (%s) got prompt %s, want %s", id, want[id], fwd.Prompt, wantPrompt)
		}
	}
}

// TestSelfTestRetryAndRestart: a passing failure (503) is retried after a
// backoff and then matches; an engine restart (a new
// process_start_time_seconds) runs the self-test again, and an engine
// that now tokenizes differently stops getting ids. A router whose
// tokenizer is not the model's own never forwards ids, even on a match.
func TestSelfTestRetryAndRestart(t *testing.T) {
	s := newServerWith(t, true, func(c *Config) {
		c.OwnTokenizer = true
		c.LoadPollInterval = 5 * time.Millisecond
	})
	e := newTokEngine(t, "down")
	if err := s.AddWorker(Worker{ID: 1, URL: e.URL}); err != nil {
		t.Fatal(err)
	}
	waitOutcome(t, s, 1, SelfTestError)
	e.mode.Store("match")
	if res := waitOutcome(t, s, 1, SelfTestMatch); !res.ForwardIDs || !s.pool.ForwardIDs(1) {
		t.Fatalf("after the retry: %+v, want a match forwarding ids", res)
	}
	e.mode.Store("mismatch")
	e.start.Add(60) // restarted a minute later
	if res := waitOutcome(t, s, 1, SelfTestMismatch); res.ForwardIDs || s.pool.ForwardIDs(1) {
		t.Errorf("after the restart: %+v, want a mismatch forwarding no ids", res)
	}
	for o, want := range map[string]float64{SelfTestError: 1, SelfTestMatch: 1, SelfTestMismatch: 1} {
		if n := metricValue(t, s, fmt.Sprintf(`kvrouter_tokenizer_selftest_total{outcome=%q,worker="1"}`, o)); n != want {
			t.Errorf("outcome %s counted %v times, want %v", o, n, want)
		}
	}

	notOwn := newServerWith(t, false, nil) // OwnTokenizer false
	m := newTokEngine(t, "match")
	if err := notOwn.AddWorker(Worker{ID: 1, URL: m.URL}); err != nil {
		t.Fatal(err)
	}
	if res := selfTestNow(t, notOwn, 1); res.Outcome != SelfTestMatch || res.ForwardIDs {
		t.Errorf("not the model's own tokenizer: %+v, want a match forwarding no ids", res)
	}
	if rec := do(t, notOwn.Handler(), "POST", "/v1/completions", `{"prompt":"as text","max_tokens":1,"stream":true}`); rec.Code != 200 ||
		!bytes.Contains(m.last(), []byte(`"prompt":"as text"`)) {
		t.Errorf("not own: %d, worker got %s, want the text", rec.Code, m.last())
	}
}

// TestPickBodyFollowsSelfTest: Pick (the endpoint picker's path) hands
// out the ids body only when the pick and every fallback passed the
// self-test: one body goes down the whole list.
func TestPickBodyFollowsSelfTest(t *testing.T) {
	s := newServerWith(t, false, func(c *Config) { c.OwnTokenizer = true })
	for id, mode := range map[uint64]string{1: "match", 2: "none"} {
		e := newTokEngine(t, mode)
		if err := s.AddWorker(Worker{ID: id, URL: e.URL}); err != nil {
			t.Fatal(err)
		}
		selfTestNow(t, s, id)
	}
	const body = `{"prompt":"pick me","max_tokens":1}`
	ids, err := builtin(t).Encode(context.Background(), "pick me")
	if err != nil {
		t.Fatal(err)
	}
	idsJSON, _ := json.Marshal(ids)
	for _, tc := range []struct {
		allow     []uint64
		fallbacks int
		ids       bool
	}{
		{[]uint64{1}, 0, true},
		{[]uint64{2}, 0, false},
		{[]uint64{1, 2}, 1, false},
	} {
		p, e := s.Pick(context.Background(), PickRequest{Path: "/v1/completions", Body: []byte(body), Allow: tc.allow, Fallbacks: tc.fallbacks})
		if e != nil {
			t.Fatal(e.Message)
		}
		if got := bytes.Contains(p.Body, []byte(`"prompt":`+string(idsJSON))); got != tc.ids {
			t.Errorf("allow %v fallbacks %d: body %s, ids %v, want %v", tc.allow, tc.fallbacks, p.Body, got, tc.ids)
		}
		p.Done("")
	}
}
