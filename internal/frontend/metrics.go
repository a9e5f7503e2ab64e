package frontend

import (
	"errors"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the frontend's Prometheus series (prefix kvrouter_).
type metrics struct {
	requests      *prometheus.CounterVec // endpoint, code
	outcomes      *prometheus.CounterVec // ok, client_gone, client_slow, upstream_error, worker_error
	decisions     *prometheus.CounterVec // worker
	rejects       *prometheus.CounterVec // reason
	overlap       prometheus.Histogram
	counts        *routeCounts // what the four below and regret's routing kinds read
	promptBlocks  prometheus.CounterFunc
	overlapBlocks prometheus.CounterFunc
	promptTokens  prometheus.CounterFunc
	cachedTokens  prometheus.CounterFunc // router's view
	workerCached  prometheus.Counter     // from worker usage
	workerPrompt  prometheus.Counter
	cost          prometheus.Histogram
	ttft          prometheus.Histogram
	duration      prometheus.Histogram
	tokenize      prometheus.Histogram
	route         prometheus.Histogram // routeHop's own time, unqueued decisions
	inflight      prometheus.Gauge
	retries       prometheus.Counter
	authFailures  prometheus.Counter
	limitRejects  *prometheus.CounterVec
	swept         prometheus.Counter
	predict       *predictMetrics  // predicted vs reported hits (predict.go)
	regret        *regretMetrics   // lost prefix blocks by cause (regret.go)
	peerHints     *peerHintMetrics // outcome (peerhint.go)
	// The hot path's children of requests, outcomes and decisions,
	// resolved once (children.go).
	requestsBy  *children[endpointStatus, prometheus.Counter]
	outcomesBy  *children[string, prometheus.Counter]
	decisionsBy *children[uint64, prometheus.Counter]
}

func newMetrics(reg *prometheus.Registry, s *Server) *metrics {
	lat := prometheus.ExponentialBuckets(0.0005, 2, 18)
	counts := new(routeCounts)
	m := &metrics{
		counts: counts,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_requests_total",
			Help: "Client requests by endpoint and HTTP status."}, []string{"endpoint", "code"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_proxied_total",
			Help: "Proxied requests by outcome (ok, client_gone, client_slow (cut by --stream-write-timeout), upstream_error, worker_error)."}, []string{"outcome"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_route_decisions_total",
			Help: "Routing decisions by chosen worker."}, []string{"worker"}),
		rejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_route_rejected_total",
			Help: "Requests the router could not place, by reason."}, []string{"reason"}),
		overlap: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_route_overlap_blocks",
			Help: "Device overlap of the chosen worker, in blocks.", Buckets: prometheus.ExponentialBucketsRange(1, 4096, 13)}),
		promptBlocks: counterOf(&counts.promptBlocks, prometheus.CounterOpts{Name: "kvrouter_prompt_blocks_total",
			Help: "Full prompt blocks routed."}),
		overlapBlocks: counterOf(&counts.overlapBlocks, prometheus.CounterOpts{Name: "kvrouter_overlap_blocks_total",
			Help: "Prompt blocks found on the chosen worker (hit rate = this / kvrouter_prompt_blocks_total)."}),
		promptTokens: counterOf(&counts.promptTokens, prometheus.CounterOpts{Name: "kvrouter_prompt_tokens_total",
			Help: "Prompt tokens routed."}),
		cachedTokens: counterOf(&counts.cachedTokens, prometheus.CounterOpts{Name: "kvrouter_cached_tokens_total",
			Help: "Prompt tokens the router expected the chosen worker to hold."}),
		workerCached: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_worker_cached_tokens_total",
			Help: "Cached prompt tokens reported by workers in usage (streamed requests with include_usage)."}),
		workerPrompt: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_worker_prompt_tokens_total",
			Help: "Prompt tokens reported by workers in usage."}),
		cost: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_route_cost",
			Help: "Cost of the chosen candidate, in blocks.", Buckets: prometheus.ExponentialBucketsRange(1, 65536, 17)}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_ttft_seconds",
			Help: "Time to first streamed event, as seen by the frontend.", Buckets: lat}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_request_duration_seconds",
			Help: "End-to-end proxied request duration.", Buckets: lat}),
		tokenize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_tokenize_seconds",
			Help: "Tokenization time per request.", Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12)}),
		route: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_route_seconds",
			Help:    "Time the frontend takes to route one hop of a request that did not queue: the router's decision and its bookkeeping around it (metrics, decision-log sample), after parsing and tokenizing.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 1.25, 50)}),
		inflight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kvrouter_inflight_requests",
			Help: "Requests being proxied."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_worker_retries_total",
			Help: "Requests retried on another worker after a connect failure."}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_auth_failures_total",
			Help: "Requests refused for a missing or wrong API key."}),
		limitRejects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_limit_rejected_total",
			Help: "Requests refused by a size limit."}, []string{"limit"}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_swept_requests_total",
			Help: "Stale requests released by the sweeper."}),
	}
	reg.MustRegister(m.requests, m.outcomes, m.decisions, m.rejects, m.overlap, m.promptBlocks, m.overlapBlocks,
		m.promptTokens, m.cachedTokens, m.workerCached, m.workerPrompt, m.cost, m.ttft, m.duration, m.tokenize, m.route,
		m.inflight, m.retries, m.authFailures, m.limitRejects, m.swept,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kvrouter_queue_depth", Help: "Requests waiting in the router queue."},
			func() float64 { return float64(s.rt.Pending()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kvrouter_active_requests", Help: "Requests tracked by the load tracker."},
			func() float64 { return float64(s.rt.Stats().Active) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "kvrouter_workers", Help: "Workers in routing."},
			func() float64 { return float64(s.rt.Stats().Workers) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kvrouter_route_settled_total",
			Help: "Routes that found the router's deferred bookkeeping unsettled and applied it first (counted in their kvrouter_route_seconds)."},
			func() float64 { return float64(s.rt.SettleStats().RouteSettled) }),
		newIndexCollector(s),
		newSessionGauge(s),
	)
	registerRuntime(reg)
	m.predict = newPredictMetrics(reg)
	m.regret = newRegretMetrics(reg, counts)
	m.peerHints = newPeerHintMetrics(reg)
	m.requestsBy = newChildren(func(k endpointStatus) prometheus.Counter { return m.requests.WithLabelValues(k.endpoint, k.status) })
	m.outcomesBy = labelCounters(m.outcomes)
	m.decisionsBy = workerCounters(m.decisions)
	return m
}

// request counts one answered request of endpoint with status.
func (m *metrics) request(endpoint, status string) {
	m.requestsBy.get(endpointStatus{endpoint, status}).Inc()
}

func (m *metrics) onRoute(req *router.Request, d *router.Decision) {
	m.decisionsBy.get(d.Worker.ID).Inc()
	m.overlap.Observe(float64(d.Overlap[kvevents.TierDevice]))
	c := m.counts
	addCount(&c.promptBlocks, d.Blocks)
	addCount(&c.overlapBlocks, min(d.Overlap[kvevents.TierDevice], d.Blocks))
	addCount(&c.promptTokens, d.ISL)
	addCount(&c.cachedTokens, d.CachedTokens)
	m.cost.Observe(d.Cost)
	m.regret.routed(c, d)
}

func (m *metrics) onReject(req *router.Request, err error) {
	reason := "other"
	switch {
	case errors.Is(err, selector.ErrAllOverloaded):
		reason = "overloaded"
	case errors.Is(err, selector.ErrNoneEligible):
		reason = "none_eligible"
	case errors.Is(err, router.ErrBadRequest):
		reason = "bad_request"
	}
	m.rejects.WithLabelValues(reason).Inc()
}

// countUsage counts a worker's usage report.
func (m *metrics) countUsage(u usage) {
	m.workerPrompt.Add(float64(u.prompt))
	m.workerCached.Add(float64(u.cached))
}

// indexCollector reports index sizes per tier at scrape time.
type indexCollector struct {
	s      *Server
	blocks *prometheus.Desc
	nodes  *prometheus.Desc
}

func newIndexCollector(s *Server) *indexCollector {
	return &indexCollector{s: s,
		blocks: prometheus.NewDesc("kvrouter_index_blocks", "(worker, block) pairs in the index, per tier.", []string{"tier"}, nil),
		nodes:  prometheus.NewDesc("kvrouter_index_nodes", "Distinct blocks in the index, per tier.", []string{"tier"}, nil),
	}
}

func (c *indexCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.blocks; ch <- c.nodes }

func (c *indexCollector) Collect(ch chan<- prometheus.Metric) {
	if c.s.rt == nil {
		return
	}
	for t := range kvevents.NumTiers {
		ix := c.s.rt.Index(kvevents.Tier(t))
		if ix == nil {
			continue
		}
		st := ix.Stats()
		name := kvevents.Tier(t).String()
		ch <- prometheus.MustNewConstMetric(c.blocks, prometheus.GaugeValue, float64(st.Blocks), name)
		ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(st.Nodes), name)
	}
}
