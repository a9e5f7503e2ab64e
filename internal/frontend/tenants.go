package frontend

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/queue"
)

// Tenant metric labels besides the configured tenants' names: requests
// without the tenant header, and every tenant not configured. The label
// set is the configured tenants plus these two, whatever clients send.
const (
	tenantLabelNone  = "_none"
	tenantLabelOther = queue.OtherTenant
)

// tenantMetrics counts routing decisions per tenant (the fair queue's key,
// header queue.TenantHeader).
type tenantMetrics struct {
	weights  map[string]float64
	queued   *prometheus.CounterVec
	admitted *prometheus.CounterVec
	// admittedBy are admitted's children, resolved once (children.go).
	admittedBy *children[string, prometheus.Counter]
	wait       *prometheus.HistogramVec
	queueOn    bool
}

func newTenantMetrics(reg *prometheus.Registry, s *Server) *tenantMetrics {
	q := s.cfg.Router.Queue
	t := &tenantMetrics{
		weights: q.TenantWeights,
		queueOn: q.Threshold > 0,
		queued: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_tenant_queued_total",
			Help: "Requests that waited in the router queue, by tenant (configured tenants, _none, _other)."}, []string{"tenant"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_tenant_admitted_total",
			Help: "Requests routed to a worker, by tenant (configured tenants, _none, _other)."}, []string{"tenant"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kvrouter_tenant_queue_wait_seconds",
			Help:    "Time a request waited in the router queue before routing (0 when it did not queue), by tenant; only with the queue on.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18)}, []string{"tenant"}),
	}
	t.admittedBy = labelCounters(t.admitted)
	reg.MustRegister(t.queued, t.admitted, t.wait, newTenantGauge(s),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kvrouter_tenant_overflow_total",
			Help: "Queued requests that shared the fair queue's _other bucket because --queue-max-tenants tenants were waiting."},
			func() float64 { return float64(s.rt.QueueTenants().Overflowed) }))
	return t
}

// label is tenant's metric label, from a bounded set.
func (t *tenantMetrics) label(tenant string) string {
	if tenant == "" {
		return tenantLabelNone
	}
	if _, ok := t.weights[tenant]; ok {
		return tenant
	}
	return tenantLabelOther
}

// routed records one routing decision of tenant: queuedAt is when it
// joined the queue (zero: it did not), err the decision's error.
func (t *tenantMetrics) routed(tenant string, queuedAt time.Time, err error) {
	if err != nil {
		return
	}
	l := t.label(tenant)
	t.admittedBy.get(l).Inc()
	if !t.queueOn {
		return
	}
	w := 0.0
	if !queuedAt.IsZero() {
		w = time.Since(queuedAt).Seconds()
	}
	t.wait.WithLabelValues(l).Observe(w)
}

// tenantGauge exports the fair queue's tenants with a sub-queue as the
// bounded store "tenants" (kvrouter_store_*), read at each scrape.
type tenantGauge struct {
	*bounds.Store
	s *Server
}

func newTenantGauge(s *Server) prometheus.Collector {
	return tenantGauge{Store: bounds.New("tenants", int64(s.cfg.Router.Queue.MaxTenants), 0), s: s}
}

// Collect implements prometheus.Collector.
func (g tenantGauge) Collect(ch chan<- prometheus.Metric) {
	if g.s.rt != nil {
		g.Set(int64(g.s.rt.QueueTenants().Tenants), 0)
	}
	g.Store.Collect(ch)
}
