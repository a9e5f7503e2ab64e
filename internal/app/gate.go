package app

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/eventplane"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/ordering"
)

// memberGate stands between the NATS event stream and the index: events of
// a worker that is neither static nor registered are held (in order, per
// worker) until it joins, then applied; held longer than holdFor, or past
// the bounds, they are dropped. Only a drop is counted (unregistered_expired
// after holdFor, unregistered past the bounds): a held event that is applied
// was never refused. A worker's first events routinely beat its
// registration, as the event stream and the registry's KV watch are two
// consumers with no order between them (a mocker publishes
// AllBlocksCleared as it starts, while it registers). Without the gate,
// anyone able to publish on the stream could fill the index with blocks of
// workers that do not exist.
//
// NB: the subscriber's position moves past held events, so a snapshot
// taken while events are held does not contain them; a replica restoring
// it misses them (a worker that registered within holdFor of publishing
// its first events). That is a lookup miss, never a wrong hit.
type memberGate struct {
	next    eventplane.Sink
	known   func(id uint64) bool
	count   func(worker uint64, reason string, n uint64)
	holdFor time.Duration
	// maxEvents and maxBlocks bound everything held (all workers).
	maxEvents, maxBlocks int

	// strict is set once the registry delivered its current entries:
	// before, an unknown worker may simply not be read yet (a replica
	// restoring its snapshot at start), and events pass as they are.
	strict atomic.Bool
	// synced is closed by the first Synced: Serve is not ready before it
	// knows its registered workers (it would refuse their requests).
	synced     chan struct{}
	syncedOnce sync.Once

	mu     sync.Mutex
	held   map[uint64][]heldEvent
	order  []uint64 // workers with held events, oldest first
	events int
	blocks int
}

type heldEvent struct {
	ev kvevents.Event
	at time.Time
}

func newMemberGate(next eventplane.Sink, known func(uint64) bool, count func(uint64, string, uint64)) *memberGate {
	return &memberGate{next: next, known: known, count: count, holdFor: 30 * time.Second,
		maxEvents: 1 << 16, maxBlocks: 1 << 20, held: map[uint64][]heldEvent{}, synced: make(chan struct{})}
}

// Apply implements eventplane.Sink. NB: it holds g.mu while it hands
// events on, so a join releasing a worker's held events and the stream's
// next event of that worker cannot pass each other.
func (g *memberGate) Apply(ev *kvevents.Event) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.strict.Load() || g.known(ev.WorkerID) {
		if len(g.held[ev.WorkerID]) > 0 {
			g.releaseLocked(ev.WorkerID) // joined since: its held events first
		}
		return g.next.Apply(ev)
	}
	now := time.Now()
	g.expireLocked(now)
	h := heldEvent{ev: *ev, at: now}
	h.ev.Blocks = append([]kvevents.Block(nil), ev.Blocks...)
	h.ev.Hashes = append([]uint64(nil), ev.Hashes...)
	if len(g.held[ev.WorkerID]) == 0 {
		g.order = append(g.order, ev.WorkerID)
	}
	g.held[ev.WorkerID] = append(g.held[ev.WorkerID], h)
	g.events++
	g.blocks += len(ev.Blocks)
	for (g.events > g.maxEvents || g.blocks > g.maxBlocks) && len(g.order) > 0 {
		g.dropLocked(g.order[0], ordering.RejectUnregistered) // the oldest worker's events go first
	}
	return nil
}

// Synced makes the gate strict: the registry's current entries are known.
// The registry calls it after every (re)started watch's initial values.
func (g *memberGate) Synced() {
	g.strict.Store(true)
	g.syncedOnce.Do(func() { close(g.synced) })
}

// SyncedC is closed once the registry's entries were first read.
func (g *memberGate) SyncedC() <-chan struct{} { return g.synced }

// Joined applies the events held for worker id (call after it joined).
func (g *memberGate) Joined(id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.releaseLocked(id)
}

func (g *memberGate) releaseLocked(id uint64) {
	evs := g.held[id]
	g.removeLocked(id)
	for i := range evs {
		_ = g.next.Apply(&evs[i].ev) // the index counts its own refusals
	}
}

// Run expires held events until ctx is done.
func (g *memberGate) Run(ctx context.Context) error {
	t := time.NewTicker(max(g.holdFor/8, 100*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			g.mu.Lock()
			g.expireLocked(now)
			g.mu.Unlock()
		}
	}
}

// Held returns the number of events held.
func (g *memberGate) Held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.events
}

// expireLocked drops the workers whose oldest held event is older than
// holdFor.
func (g *memberGate) expireLocked(now time.Time) {
	for len(g.order) > 0 {
		id := g.order[0]
		if evs := g.held[id]; len(evs) > 0 && now.Sub(evs[0].at) < g.holdFor {
			return
		}
		g.dropLocked(id, ordering.RejectUnregisteredDrop)
	}
}

// dropLocked drops worker id's held events, counted under reason.
func (g *memberGate) dropLocked(id uint64, reason string) {
	if n := len(g.held[id]); n > 0 {
		g.count(id, reason, uint64(n))
	}
	g.removeLocked(id)
}

func (g *memberGate) removeLocked(id uint64) {
	for _, h := range g.held[id] {
		g.events--
		g.blocks -= len(h.ev.Blocks)
	}
	delete(g.held, id)
	for i, x := range g.order {
		if x == id {
			g.order = append(g.order[:i], g.order[i+1:]...)
			break
		}
	}
}
