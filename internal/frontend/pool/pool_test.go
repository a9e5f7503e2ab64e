package pool

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// poolLog records what a pool asks of the router, the self-test and the
// Events callbacks, in order.
type poolLog struct {
	calls   []string
	refuse  map[uint64]error // AddWorker fails for these ids
	metrics []string
}

func (l *poolLog) AddWorker(info router.WorkerInfo) error {
	l.calls = append(l.calls, fmt.Sprintf("router.AddWorker %d", info.ID))
	return l.refuse[info.ID]
}

func (l *poolLog) RemoveWorker(id uint64) []string {
	l.calls = append(l.calls, fmt.Sprintf("router.RemoveWorker %d", id))
	return nil
}

func (l *poolLog) UpdateWorkerMetrics(w kvevents.Worker, m router.Metrics) error {
	l.metrics = append(l.metrics, fmt.Sprintf("%d/%d kv=%g", w.ID, w.Rank, m.KVUsage))
	return nil
}

var _ FleetRouter = (*poolLog)(nil)

// newTestPool builds a pool on fakes: no router, no HTTP.
func newTestPool(t *testing.T) (*Pool, *poolLog) {
	t.Helper()
	l := &poolLog{refuse: map[uint64]error{}}
	cfg := Config{Logger: slog.New(slog.DiscardHandler), Registry: prometheus.NewRegistry()}
	cfg.OnWorkerDown = func(id uint64) { l.calls = append(l.calls, fmt.Sprintf("OnWorkerDown %d", id)) }
	cfg.OnWorkerUp = func(id uint64) { l.calls = append(l.calls, fmt.Sprintf("OnWorkerUp %d", id)) }
	return New(cfg, l), l
}

func (l *poolLog) take() string {
	s := strings.Join(l.calls, "; ")
	l.calls = nil
	return s
}

// TestPoolMembership drives the pool's membership without HTTP: adds
// keep the router's list in step, a worker goes down and comes back
// once each (the router, the self-test and the callbacks told once), and
// routing candidates are the workers up.
func TestPoolMembership(t *testing.T) {
	p, l := newTestPool(t)
	for _, id := range []uint64{3, 1, 2} {
		if err := p.Add(Worker{ID: id, URL: fmt.Sprintf("http://h%d:800%d/", id, id)}); err != nil {
			t.Fatal(err)
		}
	}
	if got := l.take(); got != "router.AddWorker 3; router.AddWorker 1; router.AddWorker 2" {
		t.Errorf("adds: %s", got)
	}
	var ids []uint64
	for _, w := range p.List() {
		ids = append(ids, w.ID)
	}
	if !slices.Equal(ids, []uint64{1, 2, 3}) {
		t.Errorf("list = %v, want sorted [1 2 3]", ids)
	}
	if w, ok := p.Get(2); !ok || w.URL != "http://h2:8002" || w.Info.ID != 2 {
		t.Errorf("get(2) = %+v %v, want its URL trimmed and Info.ID set", w, ok)
	}
	if err := p.Add(Worker{ID: 9}); err == nil {
		t.Error("a worker without URL was added")
	}
	l.refuse[4] = fmt.Errorf("mismatch: %w", router.ErrBlockSize)
	if err := p.Add(Worker{ID: 4, URL: "http://h4"}); !errors.Is(err, router.ErrBlockSize) {
		t.Errorf("add with the router refusing = %v, want ErrBlockSize", err)
	}
	if _, ok := p.Get(4); ok {
		t.Error("a worker the router refused is listed")
	}
	if n := testutil.ToFloat64(p.m.workerRefused.WithLabelValues("block_size")); n != 1 {
		t.Errorf("refused block_size = %v, want 1", n)
	}
	p.CountRefused("key") // a gate's refusal, before the pool
	if n := testutil.ToFloat64(p.m.workerRefused.WithLabelValues("key")); n != 1 {
		t.Errorf("refused key = %v, want 1", n)
	}
	l.take()

	p.MarkDown(2)
	p.MarkDown(2)
	if got := l.take(); got != "router.RemoveWorker 2; OnWorkerDown 2" {
		t.Errorf("markDown twice: %s", got)
	}
	if n := testutil.ToFloat64(p.m.workerDown); n != 1 {
		t.Errorf("workers down = %v, want 1", n)
	}
	if got := p.Candidates(nil); !slices.Equal(got, []uint64{1, 3}) {
		t.Errorf("candidates = %v, want [1 3]", got)
	}
	if got := p.Candidates([]uint64{3}); !slices.Equal(got, []uint64{1}) {
		t.Errorf("candidates but 3 = %v, want [1]", got)
	}
	if n := p.Up(); n != 2 {
		t.Errorf("up = %d, want 2", n)
	}
	if w, _ := p.Get(2); !w.Down() {
		t.Error("worker 2 marked down does not say Down")
	}
	if got := p.At([]string{"h3:8003", "h2:8002", "nowhere:1", "h1:8001"}); !slices.Equal(got, []uint64{3, 1}) {
		t.Errorf("at = %v, want [3 1] (2 is down)", got)
	}

	p.eng.mu.Lock()
	p.eng.get(2).tok.res.Outcome = SelfTestMatch
	p.eng.mu.Unlock()
	p.markUp(2)
	p.markUp(2)
	if got := l.take(); got != "router.AddWorker 2; OnWorkerUp 2" {
		t.Errorf("markUp twice: %s", got)
	}
	if w, _ := p.Get(2); w.Down() {
		t.Error("worker 2 back still says Down")
	}
	if st := p.SelfTest(2); st.Outcome != selfTestPending {
		t.Errorf("self-test after markUp = %q, want it due again (maybe a new engine)", st.Outcome)
	}
	if got := p.Candidates(nil); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("candidates after markUp = %v", got)
	}

	// A worker the router will not take back stays down.
	p.MarkDown(1)
	l.refuse[1] = errors.New("no")
	p.markUp(1)
	if got := l.take(); got != "router.RemoveWorker 1; OnWorkerDown 1; router.AddWorker 1" {
		t.Errorf("markUp refused: %s", got)
	}
	if n := p.Up(); n != 2 {
		t.Errorf("up = %d, want 2", n)
	}

	p.Remove(3)
	p.Leave(2)
	if got := l.take(); got != "router.RemoveWorker 3; router.RemoveWorker 2; OnWorkerDown 2" {
		t.Errorf("remove, leave: %s", got)
	}
	if w := p.List(); len(w) != 1 || w[0].ID != 1 {
		t.Errorf("list = %+v, want worker 1 only", w)
	}
}

// TestPoolPollFeedsRouter: one poll of a worker's /metrics hands each dp
// rank's KV usage to the router; three failed polls take it down.
func TestPoolPollFeedsRouter(t *testing.T) {
	up := true
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if !up {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "vllm:kv_cache_usage_perc{engine=\"0\"} 0.25\nvllm:kv_cache_usage_perc{engine=\"1\"} 0.5\n")
	}))
	defer srv.Close()
	p, l := newTestPool(t)
	p.client = srv.Client()
	p.cfg.LoadPollInterval = time.Second
	if err := p.Add(Worker{ID: 7, URL: srv.URL, Info: router.WorkerInfo{DPSize: 2}}); err != nil {
		t.Fatal(err)
	}
	l.take()
	w, _ := p.Get(7)
	now := time.Unix(1000, 0)
	p.Poll(t.Context(), w, now)
	slices.Sort(l.metrics)
	if got := strings.Join(l.metrics, " "); got != "7/0 kv=0.25 7/1 kv=0.5" {
		t.Errorf("router metrics: %s", got)
	}
	mu.Lock()
	up = false
	mu.Unlock()
	for i := range PollFailuresDown {
		if got := l.take(); got != "" {
			t.Fatalf("after %d failed polls: %s", i, got)
		}
		p.Poll(t.Context(), w, now.Add(time.Duration(i+1)*time.Second))
	}
	if got := l.take(); got != "router.RemoveWorker 7; OnWorkerDown 7" {
		t.Errorf("after %d failed polls: %q, want the worker down", PollFailuresDown, got)
	}
}
