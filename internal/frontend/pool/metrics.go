package pool

import "github.com/prometheus/client_golang/prometheus"

// poolMetrics are the pool's series: membership, polls, probes of down
// workers and tokenizer self-tests.
type poolMetrics struct {
	workerDown    prometheus.Counter
	workerRefused *prometheus.CounterVec // reason
	probes        *prometheus.CounterVec // outcome: up, down
	selfTests     *prometheus.CounterVec // worker, outcome (selftest.go)
	workerKV      *prometheus.GaugeVec   // worker
	workerPrefill *prometheus.GaugeVec   // worker
}

// newPoolMetrics builds the pool's series and registers them on reg.
func newPoolMetrics(reg prometheus.Registerer) *poolMetrics {
	m := &poolMetrics{
		workerDown: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_worker_down_total",
			Help: "Times a worker was taken out of routing as unreachable."}),
		workerRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_workers_refused_total",
			Help: "Workers refused at registration, by reason."}, []string{"reason"}),
		selfTests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_tokenizer_selftest_total",
			Help: "Tokenizer self-tests of workers (router vs engine /tokenize on canary prompts), by outcome: match, mismatch, unavailable, error."},
			[]string{"worker", "outcome"}),
		workerKV: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kvrouter_worker_kv_usage",
			Help: "KV usage reported by each worker."}, []string{"worker"}),
		workerPrefill: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kvrouter_worker_active_prefill_tokens",
			Help: "Active prefill tokens reported by each worker."}, []string{"worker"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_worker_health_probes_total",
			Help: "GET /health probes of down workers, by outcome (up: back in routing)."}, []string{"outcome"}),
	}
	reg.MustRegister(m.workerDown, m.workerRefused, m.probes, m.selfTests, m.workerKV, m.workerPrefill)
	return m
}
