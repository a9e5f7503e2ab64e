package frontend

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvrouter/kvrouter/internal/decisionlog"
)

// registerDecisionLog exports the decision log's written and dropped
// records (dropped: over its rate or size cap), when there is a log.
func registerDecisionLog(reg *prometheus.Registry, w *decisionlog.Writer) {
	if w == nil {
		return
	}
	count := func(written bool) func() float64 {
		return func() float64 {
			wr, dr, _ := w.Stats()
			if written {
				return float64(wr)
			}
			return float64(dr)
		}
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kvrouter_decision_log_records_total",
			Help: "Routing decisions written to the decision log.", ConstLabels: prometheus.Labels{"result": "written"}}, count(true)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "kvrouter_decision_log_records_total",
			Help: "Routing decisions written to the decision log.", ConstLabels: prometheus.Labels{"result": "dropped"}}, count(false)))
}
