package frontend

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kvrouter/kvrouter/internal/frontend/oai"
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
