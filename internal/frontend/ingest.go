package frontend

import (
	"context"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/internal/frontend/sink"
	"github.com/kvrouter/kvrouter/kvevents"
)

// ErrRank is returned by Apply for an event of a dp rank beyond its
// registered worker's dp size (sink.ErrRank).
var ErrRank = sink.ErrRank

// ErrApplyPanic is returned by Apply when applying an event panicked
// (sink.ErrApplyPanic).
var ErrApplyPanic = sink.ErrApplyPanic

// The Server's event-ingestion API hands over to its sink (package sink).

// Apply hands one KV event to the router's index (eventplane.Sink): it
// is queued to its worker+rank's writer and applied by RunIndex's
// goroutines (blocking while that writer's queue is full); Flush waits
// for it. Its slices must not be modified afterwards.
func (s *Server) Apply(ev *kvevents.Event) error { return s.sink.Apply(ev) }

// RunIndex runs the sticky writers of the event-fed indexes until ctx is
// done (outside the kv policy there are none and it just waits). Events
// applied before it starts wait in the writers' queues.
func (s *Server) RunIndex(ctx context.Context) error { return s.sink.Run(ctx) }

// Flush waits until every event applied before the call is visible to
// lookups (or rejected), or ctx is done. Readiness and index dumps call
// it, so they never miss an event that was merely queued.
func (s *Server) Flush(ctx context.Context) error {
	if s.sink == nil {
		return nil // a Server not made by New (tests) has no index to wait for
	}
	return s.sink.Flush(ctx)
}

// IndexKind is the event-fed index's kind (IndexFlash or IndexRadix), ""
// outside the kv policy.
func (s *Server) IndexKind() string {
	ix := s.sink.Index(kvevents.TierDevice)
	if g, ok := ix.(*indexer.Groups); ok {
		ix = g.Inner()
	}
	switch ix.(type) {
	case nil:
		return ""
	case *indexer.Flash:
		return IndexFlash
	case *indexer.Radix:
		return IndexRadix
	}
	return "other"
}

// ObserveEventLag records the delay between a KV event's publication and
// its application (fed by the event transport when it knows it).
func (s *Server) ObserveEventLag(d time.Duration) { s.sink.ObserveLag(d) }

// ObservePublished records the lag of n events, published at published,
// that Apply has just made visible in the index: now - published, once per
// event (clamped at 0: the publisher's clock may run ahead of ours). It
// fits eventplane.SubscriberEvents.OnMessage.
func (s *Server) ObservePublished(published time.Time, n int) { s.sink.ObservePublished(published, n) }

// CountIngest counts n ingestion outcomes of a worker (0: not attributable
// to one, e.g. an undecodable message) by reason (the ordering.Reject* and
// ordering.Fault* values): a fault in
// kvrouter_event_faults_total, any other in kvrouter_events_rejected_total;
// both per worker in /debug/index. The event plane's shells call it.
func (s *Server) CountIngest(worker uint64, reason string, n uint64) { s.sink.Count(worker, reason, n) }

// IngestCounts returns a worker's ingestion outcome counts by reason (nil
// when none).
func (s *Server) IngestCounts(worker uint64) map[string]uint64 { return s.sink.Counts(worker) }
