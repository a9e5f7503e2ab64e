package frontend

import (
	"sync"
	"sync/atomic"

	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// Regret (docs/operations.md, metrics): per routing decision the prompt's
// full blocks, the deepest prefix any candidate held (reachable), the
// chosen worker's (chosen), and, when the engine reports usage, its
// actual cached blocks, all block-weighted counters; the blocks lost are
// counted by cause. The routing causes come from router.RegretOf at the
// decision; the rest are found when the engine answers: of the chosen
// blocks the engine did not report cached, those lost while a Removed or
// Cleared event of the chosen worker was applied between the decision and
// the answer are evicted_after_route, the others stale (the index said
// cached, the engine did not have them).

// Regret's causes found after routing.
const (
	LostStale             = "stale"
	LostEvictedAfterRoute = "evicted_after_route"
)

// regretMetrics are the regret counters, each series resolved once so a
// decision costs no label lookup.
type regretMetrics struct {
	blocks *prometheus.Desc       // kvrouter_route_blocks_total, kind: prompt, reachable, chosen, actual
	lost   *prometheus.CounterVec // cause

	counts  *routeCounts  // the routing kinds (routecounts.go)
	actual  atomic.Uint64 // the answered kind
	byCause [router.NumCauses]prometheus.Counter
	stale   prometheus.Counter
	evicted prometheus.Counter
}

func newRegretMetrics(reg prometheus.Registerer, counts *routeCounts) *regretMetrics {
	m := &regretMetrics{counts: counts,
		blocks: prometheus.NewDesc("kvrouter_route_blocks_total",
			"Prompt blocks per routing decision by kind: prompt (full blocks), reachable (deepest prefix any candidate held), chosen (the chosen worker's), actual (cached blocks the engine reported, requests with usage only).", []string{"kind"}, nil),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_route_lost_blocks_total",
			Help: "Prefix blocks lost by cause: reachable - chosen at the decision (load, temperature, busy, filter, queue, affinity), chosen - actual at the answer (stale, evicted_after_route)."}, []string{"cause"}),
	}
	for c := router.CauseNone + 1; c < router.NumCauses; c++ {
		m.byCause[c] = m.lost.WithLabelValues(c.String())
	}
	m.stale, m.evicted = m.lost.WithLabelValues(LostStale), m.lost.WithLabelValues(LostEvictedAfterRoute)
	reg.MustRegister(m, m.lost)
	return m
}

// Describe and Collect export kvrouter_route_blocks_total, read from the
// packed counters at scrape time.
func (m *regretMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- m.blocks }

func (m *regretMetrics) Collect(ch chan<- prometheus.Metric) {
	c := m.counts
	for _, k := range [...]struct {
		kind string
		v    *atomic.Uint64
	}{{"prompt", &c.prompt}, {"reachable", &c.reachable}, {"chosen", &c.chosen}, {"actual", &m.actual}} {
		ch <- prometheus.MustNewConstMetric(m.blocks, prometheus.CounterValue, float64(k.v.Load()), k.kind)
	}
}

// routed counts one decision's blocks and its routing loss into c.
func (m *regretMetrics) routed(c *routeCounts, d *router.Decision) {
	rg := router.RegretOf(d)
	addCount(&c.prompt, rg.Prompt)
	addCount(&c.reachable, rg.Reachable)
	addCount(&c.chosen, rg.Chosen)
	if rg.Lost > 0 && rg.Cause > router.CauseNone && rg.Cause < router.NumCauses {
		m.byCause[rg.Cause].Add(float64(rg.Lost))
	}
}

// answered counts the actual blocks of a request whose engine reported
// cachedTokens, chosen the blocks the router predicted (Regret.Chosen),
// and the predicted blocks missing: evicted after the route when the
// worker's removal epoch moved since the decision, else stale.
func (m *regretMetrics) answered(chosen, cachedTokens, blockSize int, evicted bool) {
	actual := max(0, cachedTokens) / max(1, blockSize)
	addCount(&m.actual, actual)
	if miss := chosen - actual; miss > 0 {
		if evicted {
			m.evicted.Add(float64(miss))
		} else {
			m.stale.Add(float64(miss))
		}
	}
}

// removalEpochs counts each worker's applied Removed and Cleared events,
// so a flight can tell whether its worker evicted anything between its
// decision and its answer. Keyed like predictionTracker.stored: by the
// workers whose events apply.
type removalEpochs struct {
	m sync.Map // uint64 -> *atomic.Uint64
}

// saw records an applied removal of worker id (the index writers call it).
func (e *removalEpochs) saw(id uint64) {
	v, ok := e.m.Load(id)
	if !ok {
		v, _ = e.m.LoadOrStore(id, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(1)
}

// epoch is worker id's removal count so far.
func (e *removalEpochs) epoch(id uint64) uint64 {
	if v, ok := e.m.Load(id); ok {
		return v.(*atomic.Uint64).Load()
	}
	return 0
}
