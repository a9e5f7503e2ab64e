package frontend

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
)

// sink takes the KV events of the fleet into the router's index: it
// refuses events of ranks a worker does not have, survives a panic below
// it, runs the event-fed indexes' sticky writers (conc) and counts what
// became of every event (metrics, per-worker ingest counts for
// /debug/index, Events.OnEvent).
//
// A sink is safe for concurrent use.
type sink struct {
	log    *slog.Logger
	m      *metrics
	rt     eventRouter
	ranks  workerLookup
	counts ingest
	// conc are the event-fed indexes of the tiers behind their sticky
	// writers (nil outside the kv policy), set while the router is built.
	conc [kvevents.NumTiers]*indexer.Concurrent
	// stored hears of each applied Stored event (the prediction check's
	// "the engine's events arrive"); onEvent is Events.OnEvent (nil none).
	stored  func(worker uint64)
	onEvent func(workerID uint64, err error)
}

// eventRouter applies KV events (*router.Router).
type eventRouter interface {
	ApplyEvent(ev *kvevents.Event) error
}

// workerLookup finds a registered worker (pool.get).
type workerLookup interface {
	get(id uint64) (*Worker, bool)
}

// apply hands one KV event to the router's index (Server.Apply).
func (k *sink) apply(ev *kvevents.Event) (err error) {
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
func (k *sink) checkRank(ev *kvevents.Event) error {
	w, ok := k.ranks.get(ev.WorkerID)
	if !ok || int64(ev.DPRank) < int64(max(w.Info.DPSize, 1)) {
		return nil
	}
	k.m.eventRejects.WithLabelValues("dp_rank").Inc()
	k.log.Debug("KV event refused: dp rank beyond the worker's dp size", "worker", ev.WorkerID, "rank", ev.DPRank, "dp_size", w.Info.DPSize)
	return fmt.Errorf("%w: worker %d rank %d, dp size %d", ErrRank, ev.WorkerID, ev.DPRank, max(w.Info.DPSize, 1))
}

// ErrApplyPanic is returned by Apply when applying an event panicked (a
// bug reached by input): the event transport's goroutine, and with it the
// process, survives; the event is counted as rejected (reason "panic").
var ErrApplyPanic = errors.New("frontend: applying an event panicked")

func (k *sink) recoverApply(ev *kvevents.Event, err *error) {
	p := recover()
	if p == nil {
		return
	}
	k.m.eventRejects.WithLabelValues("panic").Inc()
	k.log.Error("KV event apply panicked; event dropped", "worker", ev.WorkerID, "event_id", ev.EventID, "panic", p)
	*err = fmt.Errorf("%w: worker %d event %d: %v", ErrApplyPanic, ev.WorkerID, ev.EventID, p)
}

// run runs the sticky writers until ctx is done (Server.RunIndex).
func (k *sink) run(ctx context.Context) error {
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

// flush waits until every event applied before the call is visible to
// lookups (or rejected), or ctx is done (Server.Flush).
func (k *sink) flush(ctx context.Context) error {
	for _, c := range k.conc {
		if c != nil {
			if err := c.Flush(ctx); err != nil {
				return fmt.Errorf("frontend: flush index: %w", err)
			}
		}
	}
	return nil
}

// kind is the event-fed index's kind (IndexFlash or IndexRadix), ""
// outside the kv policy.
func (k *sink) kind() string {
	if k.conc[kvevents.TierDevice] == nil {
		return ""
	}
	switch k.conc[kvevents.TierDevice].Index().(type) {
	case *indexer.Flash:
		return IndexFlash
	case *indexer.Radix:
		return IndexRadix
	}
	return "other"
}

// observePublished records the lag of n events published at published
// (Server.ObservePublished).
func (k *sink) observePublished(published time.Time, n int) {
	if n <= 0 || published.IsZero() {
		return
	}
	lag := max(time.Since(published), 0).Seconds()
	for range n {
		k.m.eventLag.Observe(lag)
	}
}

// event hears from an index writer that ev was applied (err nil) or
// rejected: it is visible to lookups, or never will be.
func (k *sink) event(ev *kvevents.Event, err error) {
	k.m.onEvent(ev, err)
	if err != nil {
		k.counts.add(ev.WorkerID, eventRejectReason(err), 1)
	} else if ev.Kind == kvevents.KindStored {
		k.stored(ev.WorkerID)
	}
	if k.onEvent != nil {
		k.onEvent(ev.WorkerID, err)
	}
}

// count counts n ingestion outcomes of a worker by reason
// (Server.CountIngest).
func (k *sink) count(worker uint64, reason string, n uint64) {
	if n == 0 {
		return
	}
	if ordering.IsFault(reason) {
		k.m.eventFaults.WithLabelValues(reason).Add(float64(n))
	} else {
		k.m.eventRejects.WithLabelValues(reason).Add(float64(n))
	}
	k.counts.add(worker, reason, n)
}
