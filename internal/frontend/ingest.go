package frontend

import (
	"errors"
	"sync"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/ordering"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// ingest counts ingestion outcomes per worker for /debug/index.
type ingest struct {
	mu  sync.Mutex
	per map[uint64]map[string]uint64
}

func (g *ingest) add(worker uint64, reason string, n uint64) {
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

func (g *ingest) of(worker uint64) map[string]uint64 {
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

func (g *ingest) workers() []uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	ids := make([]uint64, 0, len(g.per))
	for id := range g.per {
		ids = append(ids, id)
	}
	return ids
}

// CountIngest counts n ingestion outcomes of a worker (0: not attributable
// to one, e.g. an undecodable message) by reason (the ordering.Reject* and
// ordering.Fault* values): a fault in
// kvrouter_event_faults_total, any other in kvrouter_events_rejected_total;
// both per worker in /debug/index. The event plane's shells call it.
func (s *Server) CountIngest(worker uint64, reason string, n uint64) {
	if n == 0 {
		return
	}
	if ordering.IsFault(reason) {
		s.m.eventFaults.WithLabelValues(reason).Add(float64(n))
	} else {
		s.m.eventRejects.WithLabelValues(reason).Add(float64(n))
	}
	s.ingest.add(worker, reason, n)
}

// IngestCounts returns a worker's ingestion outcome counts by reason (nil
// when none).
func (s *Server) IngestCounts(worker uint64) map[string]uint64 { return s.ingest.of(worker) }

// eventRejectReason is the reason label of an index rejection.
func eventRejectReason(err error) string {
	switch {
	case errors.Is(err, indexer.ErrUnknownParent):
		return ordering.RejectUnknownParent
	case errors.Is(err, indexer.ErrSelfParent):
		return ordering.RejectSelfParent
	case errors.Is(err, indexer.ErrBadEvent):
		return ordering.RejectBadEvent
	case errors.Is(err, router.ErrBlockSize):
		return ordering.RejectBlockSize
	}
	return ordering.RejectOther
}

func newFaultsCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvrouter_event_faults_total",
		Help: "KV event stream faults by reason: gap (opened), resync (gap given up: worker+rank cleared), restart (publisher started over: cleared), stream_reset (NATS stream started over: index rebuilt)."},
		[]string{"reason"})
}
