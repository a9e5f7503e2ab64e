package frontend

import (
	"fmt"

	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/internal/oai"
	"github.com/prometheus/client_golang/prometheus"
)

// checkSession refuses (400, counted as limit "session_id") a session id
// longer than Router.Affinity.MaxIDBytes, wherever it came from (param
// names the header or body field). The router would refuse it too, after
// tokenizing; this answers first and says why.
func (s *Server) checkSession(session, param string) *oai.Error {
	if m := s.cfg.Router.Affinity.MaxIDBytes; m > 0 && len(session) > m {
		s.m.limitRejects.WithLabelValues("session_id").Inc()
		return oai.BadRequest(param, fmt.Sprintf("the session id has %d bytes, more than this router's limit of %d", len(session), m))
	}
	return nil
}

// sessionGauge exports the router's affinity bindings as the bounded store
// "affinity" (kvrouter_store_*), read from the router's Stats at each
// scrape: the table lives in the router core, which exports nothing.
type sessionGauge struct {
	*bounds.Store
	s *Server
}

func newSessionGauge(s *Server) prometheus.Collector {
	a := s.cfg.Router.Affinity
	return sessionGauge{Store: bounds.New("affinity", int64(a.MaxSessions), a.MaxBytes), s: s}
}

// Collect implements prometheus.Collector.
func (g sessionGauge) Collect(ch chan<- prometheus.Metric) {
	if g.s.rt != nil {
		st := g.s.rt.AffinityStats()
		g.Set(int64(st.Sessions), st.Bytes)
	}
	g.Store.Collect(ch)
}
