package sink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/ordering"
	"github.com/kvrouter/kvrouter/router"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Sink.
type Config struct {
	// Logger; nil: slog.Default().
	Logger *slog.Logger
	// Registry takes the sink's series; nil: not registered.
	Registry prometheus.Registerer
	// Stored hears of each applied Stored event (the frontend's
	// prediction check: "the engine's events arrive"); nil none.
	Stored func(worker uint64)
	// Removed hears of each applied Removed or Cleared event (the
	// frontend's regret: evicted after the route); nil none.
	Removed func(worker uint64)
	// OnEvent hears of each event applied (err nil) or rejected; nil none.
	OnEvent func(worker uint64, err error)
}

// Sink takes KV events into a router's index (see the package doc).
type Sink struct {
	log     *slog.Logger
	m       metrics
	stored  func(worker uint64)
	removed func(worker uint64)
	onEvent func(worker uint64, err error)
	counts  counts

	// Set while the router is built (Writer, Attach), read-only after.
	conc  [kvevents.NumTiers]*indexer.Concurrent
	rt    Router
	ranks Ranks
}

// Router applies KV events (*router.Router).
type Router interface {
	ApplyEvent(ev *kvevents.Event) error
}

var _ Router = (*router.Router)(nil)

// Ranks reports a registered worker's dp size (ok false: not registered).
type Ranks interface {
	DPSize(worker uint64) (size int, ok bool)
}

// RanksFunc adapts a function to Ranks.
type RanksFunc func(worker uint64) (int, bool)

// DPSize calls f.
func (f RanksFunc) DPSize(worker uint64) (int, bool) { return f(worker) }

// New returns a Sink that applies nothing until Attach.
func New(cfg Config) *Sink {
	k := &Sink{log: cfg.Logger, m: newMetrics(), stored: cfg.Stored, removed: cfg.Removed, onEvent: cfg.OnEvent}
	if k.log == nil {
		k.log = slog.Default()
	}
	if k.stored == nil {
		k.stored = func(uint64) {}
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(k.m.lag, k.m.applied, k.m.rejects, k.m.faults)
	}
	return k
}

// Writer wraps tier t's event-fed index ix in sticky writers (cfg, its
// Events replaced) that report every event's outcome to k, and keeps them
// for Run and Flush. The router's Options.NewIndex calls it.
func (k *Sink) Writer(t kvevents.Tier, ix indexer.Index, cfg indexer.ConcurrentConfig) *indexer.Concurrent {
	cfg.Events = indexer.Events{
		OnApplied:  func(ev *kvevents.Event) { k.event(ev, nil) },
		OnRejected: k.event,
	}
	k.conc[t] = indexer.NewConcurrent(ix, cfg)
	return k.conc[t]
}

// Attach sets the router events go to and the registered workers' dp
// sizes; it is called once, before Apply.
func (k *Sink) Attach(rt Router, ranks Ranks) { k.rt, k.ranks = rt, ranks }

// Index returns tier t's event-fed index (nil: none, outside the kv
// policy).
func (k *Sink) Index(t kvevents.Tier) indexer.Index {
	if k.conc[t] == nil {
		return nil
	}
	return k.conc[t].Index()
}

// Apply hands one KV event to the router's index.
func (k *Sink) Apply(ev *kvevents.Event) (err error) {
	defer k.recoverApply(ev, &err)
	if err := k.checkRank(ev); err != nil {
		return err
	}
	return k.rt.ApplyEvent(ev)
}

// ErrRank is returned by Apply for an event of a dp rank beyond its
// registered worker's dp size: the router never routes to that rank, so
// its blocks could only fill the index.
var ErrRank = errors.New("frontend: dp rank beyond the worker's dp size")

// checkRank refuses (and counts) an event of a registered worker's rank
// beyond its dp size. Events of unregistered workers pass.
func (k *Sink) checkRank(ev *kvevents.Event) error {
	size, ok := k.ranks.DPSize(ev.WorkerID)
	if !ok || int64(ev.DPRank) < int64(max(size, 1)) {
		return nil
	}
	k.m.rejects.WithLabelValues("dp_rank").Inc()
	k.log.Debug("KV event refused: dp rank beyond the worker's dp size", "worker", ev.WorkerID, "rank", ev.DPRank, "dp_size", size)
	return fmt.Errorf("%w: worker %d rank %d, dp size %d", ErrRank, ev.WorkerID, ev.DPRank, max(size, 1))
}

// ErrApplyPanic is returned by Apply when applying an event panicked (a
// bug reached by input): the event transport's goroutine, and with it the
// process, survives; the event is counted as rejected (reason "panic").
var ErrApplyPanic = errors.New("frontend: applying an event panicked")

func (k *Sink) recoverApply(ev *kvevents.Event, err *error) {
	p := recover()
	if p == nil {
		return
	}
	k.m.rejects.WithLabelValues("panic").Inc()
	k.log.Error("KV event apply panicked; event dropped", "worker", ev.WorkerID, "event_id", ev.EventID, "panic", p)
	*err = fmt.Errorf("%w: worker %d event %d: %v", ErrApplyPanic, ev.WorkerID, ev.EventID, p)
}

// Run runs the sticky writers until ctx is done (none: it just waits).
// Events applied before it starts wait in the writers' queues.
func (k *Sink) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range k.conc {
		if c != nil {
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Run(ctx) }()
		}
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}

// Flush waits until every event applied before the call is visible to
// lookups (or rejected), or ctx is done.
func (k *Sink) Flush(ctx context.Context) error {
	for _, c := range k.conc {
		if c != nil {
			if err := c.Flush(ctx); err != nil {
				return fmt.Errorf("frontend: flush index: %w", err)
			}
		}
	}
	return nil
}

// ObserveLag records one event's delay from publication to application.
func (k *Sink) ObserveLag(d time.Duration) { k.m.lag.Observe(d.Seconds()) }

// ObservePublished records the lag of n events, published at published,
// that Apply has just made visible: now - published, once per event
// (clamped at 0: the publisher's clock may run ahead of ours).
func (k *Sink) ObservePublished(published time.Time, n int) {
	if n <= 0 || published.IsZero() {
		return
	}
	lag := max(time.Since(published), 0).Seconds()
	for range n {
		k.m.lag.Observe(lag)
	}
}

// event hears from an index writer that ev was applied (err nil) or
// rejected: it is visible to lookups, or never will be.
func (k *Sink) event(ev *kvevents.Event, err error) {
	if err != nil {
		reason := rejectReason(err)
		k.m.rejects.WithLabelValues(reason).Inc()
		k.counts.add(ev.WorkerID, reason, 1)
	} else {
		k.m.applied.Inc()
		if ev.Kind == kvevents.KindStored {
			k.stored(ev.WorkerID)
		} else if k.removed != nil {
			k.removed(ev.WorkerID)
		}
	}
	if k.onEvent != nil {
		k.onEvent(ev.WorkerID, err)
	}
}

// Count counts n ingestion outcomes of a worker (0: not attributable to
// one, e.g. an undecodable message) by reason (the ordering.Reject* and
// ordering.Fault* values): a fault in kvrouter_event_faults_total, any
// other in kvrouter_events_rejected_total; both per worker in Counts.
func (k *Sink) Count(worker uint64, reason string, n uint64) {
	if n == 0 {
		return
	}
	if ordering.IsFault(reason) {
		k.m.faults.WithLabelValues(reason).Add(float64(n))
	} else {
		k.m.rejects.WithLabelValues(reason).Add(float64(n))
	}
	k.counts.add(worker, reason, n)
}

// Counts returns a worker's ingestion outcome counts by reason (nil when
// none).
func (k *Sink) Counts(worker uint64) map[string]uint64 { return k.counts.of(worker) }

// Workers returns the workers with ingestion outcome counts, in no order.
func (k *Sink) Workers() []uint64 { return k.counts.workers() }

// rejectReason is the reason label of an index rejection.
func rejectReason(err error) string {
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
