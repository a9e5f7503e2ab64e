package epp

import "github.com/prometheus/client_golang/prometheus"

// metrics are the picker's own series, beside the frontend's (requests,
// decisions, TTFT, ...), which count the picker's requests too.
type metrics struct {
	streams         prometheus.Counter
	picks           *prometheus.CounterVec
	pick            prometheus.Histogram
	servedElsewhere prometheus.Counter
	servedFallback  prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		streams: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_epp_streams_total",
			Help: "ext_proc streams opened by the proxy (one per HTTP request)."}),
		picks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_epp_picks_total",
			Help: "Endpoint picks by result: 200 picked, else the ImmediateResponse status."}, []string{"code"}),
		pick: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "kvrouter_epp_pick_seconds",
			Help:    "Time from the complete request to the pick (parse, tokenize, route; queueing included).",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16)}),
		servedElsewhere: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_epp_served_elsewhere_total",
			Help: "Responses the proxy reports served by an endpoint neither picked nor listed as a fallback."}),
		servedFallback: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_epp_served_fallback_total",
			Help: "Responses the proxy reports served by one of the pick's fallback endpoints (--fallbacks); their load moved there."}),
	}
	reg.MustRegister(m.streams, m.picks, m.pick, m.servedElsewhere, m.servedFallback)
	return m
}
