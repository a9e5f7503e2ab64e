package frontend

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// queueLen is the tokenizations running or waiting.
func queueLen(s *Server) int64 { n, _ := s.limits().queue.Size(); return n }

// storeGauges scrapes reg's kvrouter_store_* series of store name.
func storeGauges(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "kvrouter_store_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "store" && l.GetValue() == name {
					out[strings.TrimPrefix(mf.GetName(), "kvrouter_store_")] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestTokenizeQueueBytesBounded: the tokenizations in flight are bounded
// in prompt bytes as well as in count (529 beyond), a lone prompt larger
// than the byte bound is still admitted, and the queue is exported as
// store "tokenize_queue" with its limits.
func TestTokenizeQueueBytesBounded(t *testing.T) {
	var gt *gateTok
	reg := prometheus.NewRegistry()
	s := newServerWith(t, false, func(c *Config) {
		gt = &gateTok{Tokenizer: c.Tokenizer, gate: make(chan struct{})}
		c.Tokenizer = gt
		c.Registry = reg
		c.Router.Policy = router.PolicyRoundRobin
		c.Hardening.Tokenizers, c.Hardening.TokenizeQueue, c.Hardening.TokenizeQueueBytes = 1, 8, 1000
	})
	var hits atomic.Int64
	wk := fakeWorker(t, 0, &hits)
	if err := s.AddWorker(Worker{ID: 1, URL: wk.URL}); err != nil {
		t.Fatal(err)
	}
	prompt := func(n int) string { return `{"prompt":"` + strings.Repeat("a ", n/2) + `"}` }
	if g := storeGauges(t, reg, "tokenize_queue"); g["limit_entries"] != 9 || g["limit_bytes"] != 1000 || g["entries"] != 0 {
		t.Fatalf("tokenize_queue gauges before any request: %v", g)
	}
	gt.closed.Store(true)
	codes := make(chan int, 2)
	go func() { codes <- do(t, s.Handler(), "POST", "/v1/completions", prompt(1200)).Code }()
	waitFor(t, "the lone large prompt tokenizing", func() bool { return gt.calls.Load() == 1 })
	if g := storeGauges(t, reg, "tokenize_queue"); g["entries"] != 1 || g["bytes"] != 1200 {
		t.Errorf("tokenize_queue gauges with one 1200-byte prompt in flight: %v", g)
	}
	rec := do(t, s.Handler(), "POST", "/v1/completions", prompt(100))
	if e, ok := oai.ParseError(rec.Code, rec.Body.Bytes()); rec.Code != 529 || !ok || e.Code != "overloaded" {
		t.Errorf("a prompt beyond the queue's bytes: %d %s, want 529", rec.Code, rec.Body.String())
	}
	close(gt.gate)
	if c := <-codes; c != 200 {
		t.Errorf("the lone large prompt: %d, want 200", c)
	}
	go func() { codes <- do(t, s.Handler(), "POST", "/v1/completions", prompt(100)).Code }()
	if c := <-codes; c != 200 {
		t.Errorf("a small prompt once the queue emptied: %d", c)
	}
	if n, b := s.limits().queue.Size(); n != 0 || b != 0 {
		t.Errorf("queue holds %d entries, %d bytes after all answered", n, b)
	}
}

// TestStreamBuffersBounded: the proxied requests and their relays'
// buffers are the store "stream_buffers", bounded in count (503
// too_many_streams beyond MaxStreams, before routing) and in bytes (a
// folded answer beyond MaxStreamBufferBytes is a 502), and everything is
// returned when the answers end.
func TestStreamBuffersBounded(t *testing.T) {
	gate := make(chan struct{})
	var hits atomic.Int64
	wk := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := hits.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		if bytes.Contains(body, []byte("big")) {
			chunk := `{"choices":[{"index":0,"text":"` + strings.Repeat("x", 1024) + `"}]}`
			for range 50 {
				_, _ = io.WriteString(w, "data: "+chunk+"\n\n")
			}
		} else {
			_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"text":"a"}]}`+"\n\n")
			if n <= 2 {
				w.(http.Flusher).Flush()
				<-gate
			}
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(wk.Close)
	reg := prometheus.NewRegistry()
	s := newServerWith(t, false, func(c *Config) {
		c.Registry = reg
		c.Router.Policy = router.PolicyRoundRobin
		c.Hardening.MaxStreams, c.Hardening.MaxStreamBufferBytes = 2, 40<<10
	})
	if err := s.AddWorker(Worker{ID: 1, URL: wk.URL}); err != nil {
		t.Fatal(err)
	}
	if g := storeGauges(t, reg, "stream_buffers"); g["limit_entries"] != 2 || g["limit_bytes"] != 40<<10 || g["entries"] != 0 {
		t.Fatalf("stream_buffers gauges before any request: %v", g)
	}
	codes := make(chan int, 2)
	for range 2 {
		go func() { codes <- do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","stream":true}`).Code }()
	}
	waitFor(t, "two streams open", func() bool {
		g := storeGauges(t, reg, "stream_buffers")
		return hits.Load() == 2 && g["entries"] == 2 && g["bytes"] >= 2*4096
	})
	rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi","stream":true}`)
	if e, ok := oai.ParseError(rec.Code, rec.Body.Bytes()); rec.Code != 503 || !ok || e.Code != "too_many_streams" {
		t.Errorf("a third stream beyond MaxStreams 2: %d %s, want 503 too_many_streams", rec.Code, rec.Body.String())
	}
	close(gate)
	for range 2 {
		if c := <-codes; c != 200 {
			t.Errorf("an open stream: %d", c)
		}
	}
	rec = do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"big"}`)
	if e, ok := oai.ParseError(rec.Code, rec.Body.Bytes()); rec.Code != 502 || !ok || e.Code != "worker_stream_error" {
		t.Errorf("a folded answer of ~52 KB beyond 40 KiB of stream buffers: %d %.200s, want 502", rec.Code, rec.Body.String())
	}
	if rec := do(t, s.Handler(), "POST", "/v1/completions", `{"prompt":"hi"}`); rec.Code != 200 {
		t.Errorf("a small folded answer: %d %s", rec.Code, rec.Body.String())
	}
	if g := storeGauges(t, reg, "stream_buffers"); g["entries"] != 0 || g["bytes"] != 0 {
		t.Errorf("stream_buffers after every answer ended: %v", g)
	}
}
