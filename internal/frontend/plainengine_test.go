package frontend

import (
	"fmt"
	"github.com/kvrouter/kvrouter/internal/frontend/pool"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/internal/discovery"
)

// plainEngine is an OpenAI-compatible server that is neither vLLM nor
// SGLang: /v1/models and /v1/completions; /metrics is absent (404) or a
// page without any engine gauge; /health is absent or answers 200.
type plainEngine struct {
	*httptest.Server
	metricsHits, healthHits, modelsHits atomic.Int64
}

func newPlainEngine(t *testing.T, metricsPage, health bool) *plainEngine {
	t.Helper()
	e := &plainEngine{}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			e.metricsHits.Add(1)
			if !metricsPage {
				http.NotFound(w, r)
				return
			}
			_, _ = io.WriteString(w, "# TYPE go_goroutines gauge\ngo_goroutines 12\n# TYPE http_requests_total counter\nhttp_requests_total 3\n")
		case "/health":
			e.healthHits.Add(1)
			if !health {
				http.NotFound(w, r)
			}
		case "/v1/models":
			e.modelsHits.Add(1)
			writeJSON(w, 200, map[string]any{"object": "list", "data": []map[string]any{{"id": "plain", "object": "model"}}})
		case "/v1/completions":
			_, _ = io.Copy(io.Discard, r.Body)
			writeJSON(w, 200, map[string]any{"id": "c", "object": "text_completion",
				"choices": []map[string]any{{"index": 0, "text": "ok", "finish_reason": "stop"}},
				"usage":   map[string]any{"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(e.Close)
	return e
}

// TestPlainOpenAIEngine: a worker without engine metrics (no /metrics, a
// /metrics without vLLM or SGLang gauges, or the worker option
// metrics=off) stays in routing through 120 poll cycles (30 s at the
// default --load-poll of 250ms) with a request between every two polls:
// no down event, no failed request, its health read from /health (else
// /v1/models). On the old code three polls took it out, /health brought it
// back, and the loop went on (requests failing meanwhile).
func TestPlainOpenAIEngine(t *testing.T) {
	const polls = 120
	for _, tc := range []struct {
		name                 string
		metricsPage, health  bool
		metrics              string
		wantMetricsHits      bool
		wantHealth, wantList bool
	}{
		{name: "no /metrics, no /health", wantMetricsHits: true, wantList: true},
		{name: "no engine gauges", metricsPage: true, health: true, wantMetricsHits: true, wantHealth: true},
		{name: "metrics=off", metricsPage: true, health: true, metrics: discovery.MetricsOff, wantHealth: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var downs atomic.Int64
			s := newServerWith(t, false, func(c *Config) {
				c.Events.OnWorkerDown = func(uint64) { downs.Add(1) }
			})
			e := newPlainEngine(t, tc.metricsPage, tc.health)
			if err := s.Join(discovery.Worker{ID: 1, URL: e.URL, Metrics: tc.metrics}); err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			now := time.Now()
			failed := 0
			for i := range polls {
				w := s.Workers()[0] // a copy, as the pool's Run polls
				s.pool.Poll(ctx, &w, now.Add(time.Duration(i)*250*time.Millisecond))
				rec := do(t, s.Handler(), "POST", "/v1/completions",
					fmt.Sprintf(`{"model":"kvrouter-mock","prompt":"request %d to a plain engine","max_tokens":1}`, i))
				if rec.Code != http.StatusOK {
					failed++
				}
			}
			if downs.Load() != 0 || failed != 0 {
				t.Fatalf("%d polls: %d down events, %d of %d requests failed; want none", polls, downs.Load(), failed, polls)
			}
			if st := s.Router().Stats(); st.Workers != 1 {
				t.Fatalf("worker out of routing: %+v", st)
			}
			if h := s.pool.Health(1); h == nil || !h.NoMetrics || h.PollFailures != 0 {
				t.Fatalf("debug index health %+v: want no_metrics and no poll failures", h)
			}
			if got := e.metricsHits.Load() > 0; got != tc.wantMetricsHits {
				t.Errorf("/metrics read %d times", e.metricsHits.Load())
			}
			if got := e.healthHits.Load() >= polls; got != tc.wantHealth && tc.health {
				t.Errorf("/health asked %d times over %d polls", e.healthHits.Load(), polls)
			}
			if tc.wantList && e.modelsHits.Load() < polls {
				t.Errorf("/v1/models asked %d times over %d polls without /health", e.modelsHits.Load(), polls)
			}
		})
	}
}

// TestPlainEngineGoesDown: a worker without engine metrics still leaves
// routing when it stops answering (its health probe fails pool.PollFailuresDown
// times in a row), and comes back when it answers again.
func TestPlainEngineGoesDown(t *testing.T) {
	s := newServerWith(t, false, nil)
	e := newPlainEngine(t, false, true)
	if err := s.AddWorker(Worker{ID: 1, URL: e.URL}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Now()
	w := s.Workers()[0]
	s.pool.Poll(ctx, &w, now)
	e.Close()
	for i := range pool.PollFailuresDown {
		w = s.Workers()[0]
		s.pool.Poll(ctx, &w, now.Add(time.Duration(i+1)*time.Second))
	}
	if st := s.Router().Stats(); st.Workers != 0 {
		t.Fatalf("an unreachable plain engine stayed in routing after %d polls", pool.PollFailuresDown)
	}
}
