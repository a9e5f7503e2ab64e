package epp

import (
	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the picker's own series, beside the frontend's (requests,
// decisions, TTFT, ...), which count the picker's requests too.
type metrics struct {
	streams         prometheus.Counter
	picks           *prometheus.CounterVec
	pick            prometheus.Histogram
	servedElsewhere prometheus.Counter
	servedFallback  prometheus.Counter
	unparsed        prometheus.Counter
	// bodies are the request bodies being read (entries bounded by
	// serve's --max-bodies; each by --max-body-bytes); answers what the
	// picks hold to parse their answers (each bounded by
	// frontend.MaxResponseLine).
	bodies  *bounds.Store
	answers *bounds.Store
}

func newMetrics(reg *prometheus.Registry, maxBodies int) *metrics {
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
		unparsed: prometheus.NewCounter(prometheus.CounterOpts{Name: "kvrouter_epp_answers_unparsed_total",
			Help: "Answers whose parsing (token count, usage) was given up: an SSE line over 1 MiB, or a JSON answer over 1 MiB; the body still went to the client."}),
		bodies:  bounds.New("epp_request_bodies", int64(maxBodies), 0),
		answers: bounds.New("epp_answer_buffers", 0, 0),
	}
	reg.MustRegister(m.streams, m.picks, m.pick, m.servedElsewhere, m.servedFallback, m.unparsed, m.bodies, m.answers)
	return m
}
