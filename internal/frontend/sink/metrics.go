package sink

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the sink's series.
type metrics struct {
	lag     prometheus.Histogram
	applied prometheus.Counter
	rejects *prometheus.CounterVec // reason
	faults  *prometheus.CounterVec // reason
}

func newMetrics() metrics {
	return metrics{
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_event_lag_seconds",
			Help: "Delay from a KV event's publication to its application.", Buckets: prometheus.ExponentialBuckets(1e-5, 4, 12)}),
		applied: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_events_applied_total",
			Help: "KV events applied to the index."}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_events_rejected_total",
			Help: "KV events refused, by reason (decode, block_size, unknown_pod, unknown_pod_expired, model_mismatch, worker_mismatch, unregistered, unknown_parent, self_parent, bad_event, unknown_group)."}, []string{"reason"}),
		faults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_event_faults_total",
			Help: "KV event stream faults by reason: gap (opened), resync (gap given up: worker+rank cleared), restart (publisher started over: cleared), stream_reset (NATS stream started over: index rebuilt)."},
			[]string{"reason"}),
	}
}

// counts are ingestion outcomes per worker, by reason, for /debug/index.
type counts struct {
	mu  sync.Mutex
	per map[uint64]map[string]uint64
}

func (g *counts) add(worker uint64, reason string, n uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.per == nil {
		g.per = map[uint64]map[string]uint64{}
	}
	m := g.per[worker]
	if m == nil {
		m = map[string]uint64{}
		g.per[worker] = m
	}
	m[reason] += n
}

func (g *counts) of(worker uint64) map[string]uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.per[worker]) == 0 {
		return nil
	}
	out := make(map[string]uint64, len(g.per[worker]))
	for k, v := range g.per[worker] {
		out[k] = v
	}
	return out
}

func (g *counts) workers() []uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]uint64, 0, len(g.per))
	for id := range g.per {
		ids = append(ids, id)
	}
	return ids
}
