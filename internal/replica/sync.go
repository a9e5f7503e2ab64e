package replica

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvrouter/kvrouter/internal/bounds"
	"github.com/kvrouter/kvrouter/internal/eventplane/loadsync"
	"github.com/kvrouter/kvrouter/router"
	"github.com/nats-io/nats.go"
)

// Target is the router side of load sync (*router.Router has it).
type Target interface {
	ApplyRemote(origin string, b router.Booking, now time.Time) error
	DropOrigin(origin string) int
}

// Peer is another replica heard from.
type Peer struct {
	Origin   string
	LastSeen time.Time // local clock
	Applied  uint64    // its bookings applied
}

// SyncStats counts what a LoadSync did.
type SyncStats struct {
	// Published: own bookings queued for sending (sent or dropped, see
	// Wire); Applied and Rejected: remote bookings applied or refused by
	// the router (a duplicate, a free of an unknown request: lost or
	// reordered messages); Heartbeats received; Expired peers whose
	// bookings were dropped, and Dropped the bookings that went with them.
	Published, Applied, Rejected, Heartbeats, Expired, Dropped uint64
	// Wire is the loadsync transport's counters.
	Wire loadsync.Stats
}

// LoadSync shares this replica's bookings with the others and applies
// theirs to the router (DESIGN.md §9: ephemeral state). Build it before
// the router, hand Publish to router.Events.OnBooking, then Run it with
// the router. Safe for concurrent use.
type LoadSync struct {
	cfg  SyncConfig
	wire *loadsync.Sync
	// target is set by Run before the subscription starts.
	target Target

	mu    sync.Mutex
	peers map[string]*Peer
	// peerStore counts peers, each peerCost plus its origin's bytes
	// (store "replica_peers"; kept in step under mu).
	peerStore *bounds.Store

	published, applied, rejected, heartbeats, expired, dropped atomic.Uint64
}

// NewLoadSync returns a LoadSync on nc (the eventplane.Conn's NC); it
// does no I/O. cfg's zero fields take the SyncConfig defaults; Enabled is
// not looked at (a disabled sync is one the wiring does not build).
func NewLoadSync(nc *nats.Conn, cfg SyncConfig, id string) (*LoadSync, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults(id)
	s := &LoadSync{cfg: cfg, peers: make(map[string]*Peer),
		peerStore: bounds.New("replica_peers", int64(cfg.MaxPeers), int64(cfg.MaxPeers)*(loadsync.MaxOriginBytes+peerCost))}
	s.wire = loadsync.New(nc, loadsync.Config{Subject: cfg.Subject, Origin: cfg.Origin, MaxBatch: cfg.MaxBatch,
		MaxDelay: cfg.MaxDelay, Queue: cfg.Queue, Logger: cfg.Logger}, s)
	return s, nil
}

// peerCost estimates a peer's bytes beyond its origin (the Peer and its
// map entry).
const peerCost = 96

// PeerStore is the bounded store of the replicas tracked
// ("replica_peers"), to register on a Prometheus registry.
func (s *LoadSync) PeerStore() *bounds.Store { return s.peerStore }

// Origin is this replica's id on the wire.
func (s *LoadSync) Origin() string { return s.cfg.Origin }

// Publish queues one of this router's bookings for the others; it never
// blocks (a full queue drops it, counted in Wire.Dropped). It fits
// router.Events.OnBooking.
func (s *LoadSync) Publish(b router.Booking) {
	s.published.Add(1)
	s.wire.Publish(MessageOf(b))
}

// Run sends heartbeats, applies the others' bookings to t, and drops the
// bookings of replicas unheard for Timeout, until ctx is done.
func (s *LoadSync) Run(ctx context.Context, t Target) error {
	if t == nil {
		return errors.New("replica: load sync needs a target router")
	}
	s.target = t
	done := make(chan error, 1)
	go func() { done <- s.wire.Run(ctx) }()
	hb := time.NewTicker(s.cfg.Heartbeat)
	defer hb.Stop()
	sweep := time.NewTicker(max(s.cfg.Timeout/4, time.Millisecond))
	defer sweep.Stop()
	s.wire.Publish(loadsync.Message{Kind: loadsync.KindHeartbeat})
	for {
		select {
		case <-ctx.Done():
			return <-done
		case err := <-done:
			return err
		case <-hb.C:
			s.wire.Publish(loadsync.Message{Kind: loadsync.KindHeartbeat})
		case now := <-sweep.C:
			s.expire(now)
		}
	}
}

// expire drops the bookings of peers unheard for Timeout at now.
func (s *LoadSync) expire(now time.Time) {
	var gone []string
	s.mu.Lock()
	for o, p := range s.peers {
		if now.Sub(p.LastSeen) > s.cfg.Timeout {
			gone = append(gone, o)
			delete(s.peers, o)
			s.peerStore.Add(-1, -int64(len(o)+peerCost))
		}
	}
	s.mu.Unlock()
	for _, o := range gone {
		n := s.target.DropOrigin(o)
		s.expired.Add(1)
		s.dropped.Add(uint64(n))
		s.cfg.Logger.Info("replica silent: its bookings dropped", "origin", o, "bookings", n, "timeout", s.cfg.Timeout)
	}
}

// ApplyRemote implements loadsync.Applier: called on the subscription's
// goroutine, in the order origin sent.
func (s *LoadSync) ApplyRemote(origin string, m *loadsync.Message) {
	now := time.Now()
	s.mu.Lock()
	p := s.peers[origin]
	if p == nil {
		if !s.peerStore.Fits(1, int64(len(origin)+peerCost)) {
			s.mu.Unlock()
			s.rejected.Add(1)
			return
		}
		p = &Peer{Origin: origin}
		s.peers[origin] = p
		s.peerStore.Add(1, int64(len(origin)+peerCost))
		s.cfg.Logger.Info("replica heard", "origin", origin)
	}
	p.LastSeen = now
	if m.Kind != loadsync.KindHeartbeat {
		p.Applied++
	}
	s.mu.Unlock()
	if m.Kind == loadsync.KindHeartbeat {
		s.heartbeats.Add(1)
		return
	}
	b, ok := BookingOf(m)
	if !ok {
		s.rejected.Add(1)
		return
	}
	if err := s.target.ApplyRemote(origin, b, now); err != nil {
		s.rejected.Add(1)
		return
	}
	s.applied.Add(1)
}

// Peers returns the replicas heard from within Timeout, sorted by origin.
func (s *LoadSync) Peers() []Peer {
	s.mu.Lock()
	out := make([]Peer, 0, len(s.peers))
	for _, p := range s.peers {
		out = append(out, *p)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Peer) int { return cmp.Compare(a.Origin, b.Origin) })
	return out
}

// Stats returns the counters.
func (s *LoadSync) Stats() SyncStats {
	return SyncStats{Published: s.published.Load(), Applied: s.applied.Load(), Rejected: s.rejected.Load(),
		Heartbeats: s.heartbeats.Load(), Expired: s.expired.Load(), Dropped: s.dropped.Load(), Wire: s.wire.Stats()}
}

// MessageOf is b on the wire (its Locals copied: the router's are
// scratch).
func MessageOf(b router.Booking) loadsync.Message {
	m := loadsync.Message{Request: b.ID, Worker: b.Worker.ID, Rank: b.Worker.Rank}
	switch b.Kind {
	case router.BookRoute:
		m.Kind = loadsync.KindRoute
		m.Locals = slices.Clone(b.Locals)
		m.ISL, m.PrefillTokens, m.OutputBlocks = b.ISL, b.PrefillTokens, b.OutputBlocks
	case router.BookPrefillDone:
		m.Kind = loadsync.KindPrefillDone
	case router.BookFree:
		m.Kind = loadsync.KindFree
	case router.BookBind:
		m.Kind = loadsync.KindAffinity
		m.Session = b.Session
	}
	return m
}

// BookingOf is the booking m carries (false for a heartbeat or an unknown
// kind). Its Locals alias m's.
func BookingOf(m *loadsync.Message) (router.Booking, bool) {
	b := router.Booking{ID: m.Request}
	b.Worker.ID, b.Worker.Rank = m.Worker, m.Rank
	switch m.Kind {
	case loadsync.KindRoute:
		b.Kind = router.BookRoute
		b.Locals, b.ISL, b.PrefillTokens, b.OutputBlocks = m.Locals, m.ISL, m.PrefillTokens, m.OutputBlocks
	case loadsync.KindPrefillDone:
		b.Kind = router.BookPrefillDone
	case loadsync.KindFree:
		b.Kind = router.BookFree
	case loadsync.KindAffinity:
		b.Kind = router.BookBind
		b.Session = m.Session
	default:
		return router.Booking{}, false
	}
	return b, true
}
