package frontend

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvrouter/kvrouter/queue"
	"github.com/kvrouter/kvrouter/router"
)

// gatedEngine is a fake engine that serves one completion per token on
// gate and records the prompts in the order they arrived.
type gatedEngine struct {
	*httptest.Server
	gate  chan struct{}
	mu    sync.Mutex
	order []string
}

func newGatedEngine(t *testing.T) *gatedEngine {
	t.Helper()
	e := &gatedEngine{gate: make(chan struct{})}
	e.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			return // /health, /metrics: up, nothing reported
		}
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.order = append(e.order, tenantOfPrompt(string(b)))
		e.mu.Unlock()
		select {
		case <-e.gate:
		case <-r.Context().Done():
			return
		}
		writeJSON(rw, 200, map[string]any{"choices": []map[string]any{{"text": "a"}}})
	}))
	t.Cleanup(e.Close)
	return e
}

// tenantOfPrompt finds the request name ("h3", "l1") the test put in the
// prompt, forwarded as text or token ids (then it is the engine's order
// only that matters: names are recovered from the frontend's bodies).
func tenantOfPrompt(body string) string {
	for _, w := range strings.FieldsFunc(body, func(r rune) bool { return r == ' ' || r == '"' }) {
		if strings.HasPrefix(w, "req-") {
			return strings.TrimPrefix(w, "req-")
		}
	}
	return body
}

func (e *gatedEngine) arrived() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.order...)
}

// twoTenantOrder saturates one worker (one request at a time), queues five
// requests of tenant heavy and then one of tenant light, and returns the
// order the engine served them in.
func twoTenantOrder(t *testing.T, fair bool) ([]string, *Server) {
	s := newServerWith(t, true, func(c *Config) {
		c.ForwardTokens = false
		c.Router.Queue.Threshold = 0.5 // saturated beyond 1 token of prefill
		c.Router.Queue.Fair = fair
		c.Router.Queue.TenantWeights = map[string]float64{"heavy": 1, "light": 1}
	})
	e := newGatedEngine(t)
	if err := s.AddWorker(Worker{ID: 1, URL: e.URL, Info: router.WorkerInfo{MaxNumBatchedTokens: 2}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 8)
	send := func(tenant, name string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"prompt":"req-%s %s asks a question long enough to fill the batch","max_tokens":1}`, name, strings.Repeat(name+" ", 8))
			req := httptest.NewRequest("POST", "/v1/completions", strings.NewReader(body))
			req.Header.Set(queue.TenantHeader, tenant)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			codes <- rec.Code
		}()
	}
	send("heavy", "h0")
	waitUntil(t, "h0 at the engine", func() bool { return len(e.arrived()) == 1 })
	for i := 1; i <= 5; i++ {
		send("heavy", fmt.Sprintf("h%d", i))
		waitUntil(t, "heavy request queued", func() bool { return s.Router().Pending() == i })
	}
	send("light", "l1")
	waitUntil(t, "light request queued", func() bool { return s.Router().Pending() == 6 })
	for n := 1; n <= 7; n++ {
		waitUntil(t, "next request at the engine", func() bool { return len(e.arrived()) == n })
		e.gate <- struct{}{}
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != 200 {
			t.Fatalf("status %d", c)
		}
	}
	return e.arrived(), s
}

// TestTenantFairnessFrontend: through the HTTP frontend, a light tenant's
// request queued behind a heavy tenant's backlog of five is served second
// with --queue-fair (DRR, equal weights), last without; the per-tenant
// metrics count both tenants.
func TestTenantFairnessFrontend(t *testing.T) {
	order, s := twoTenantOrder(t, true)
	if order[2] != "l1" {
		t.Fatalf("fair: engine order %v, want l1 third (after h0 running and h1)", order)
	}
	if got := testutil.ToFloat64(s.tm.queued.WithLabelValues("light")); got != 1 {
		t.Errorf("kvrouter_tenant_queued_total{tenant=light} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(s.tm.admitted.WithLabelValues("heavy")); got != 6 {
		t.Errorf("kvrouter_tenant_admitted_total{tenant=heavy} = %v, want 6", got)
	}
	order, _ = twoTenantOrder(t, false)
	if order[6] != "l1" {
		t.Fatalf("unfair: engine order %v, want l1 last", order)
	}
}
