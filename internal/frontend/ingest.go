package frontend

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
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

// The Server's event-ingestion API hands over to its sink (sink.go).

// Apply hands one KV event to the router's index (eventplane.Sink): it
// is queued to its worker+rank's writer and applied by RunIndex's
// goroutines (blocking while that writer's queue is full); Flush waits
// for it. Its slices must not be modified afterwards.
func (s *Server) Apply(ev *kvevents.Event) error { return s.sink.apply(ev) }

// RunIndex runs the sticky writers of the event-fed indexes until ctx is
// done (outside the kv policy there are none and it just waits). Events
// applied before it starts wait in the writers' queues.
func (s *Server) RunIndex(ctx context.Context) error { return s.sink.run(ctx) }

// Flush waits until every event applied before the call is visible to
// lookups (or rejected), or ctx is done. Readiness and index dumps call
// it, so they never miss an event that was merely queued.
func (s *Server) Flush(ctx context.Context) error { return s.sink.flush(ctx) }

// IndexKind is the event-fed index's kind (IndexFlash or IndexRadix), ""
// outside the kv policy.
func (s *Server) IndexKind() string { return s.sink.kind() }

// ObserveEventLag records the delay between a KV event's publication and
// its application (fed by the event transport when it knows it).
func (s *Server) ObserveEventLag(d time.Duration) { s.m.eventLag.Observe(d.Seconds()) }

// ObservePublished records the lag of n events, published at published,
// that Apply has just made visible in the index: now - published, once per
// event (clamped at 0: the publisher's clock may run ahead of ours). It
// fits eventplane.SubscriberEvents.OnMessage.
func (s *Server) ObservePublished(published time.Time, n int) { s.sink.observePublished(published, n) }

// CountIngest counts n ingestion outcomes of a worker (0: not attributable
// to one, e.g. an undecodable message) by reason (the ordering.Reject* and
// ordering.Fault* values): a fault in
// kvrouter_event_faults_total, any other in kvrouter_events_rejected_total;
// both per worker in /debug/index. The event plane's shells call it.
func (s *Server) CountIngest(worker uint64, reason string, n uint64) { s.sink.count(worker, reason, n) }

// IngestCounts returns a worker's ingestion outcome counts by reason (nil
// when none).
func (s *Server) IngestCounts(worker uint64) map[string]uint64 { return s.sink.counts.of(worker) }
