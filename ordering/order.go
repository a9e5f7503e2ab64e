package ordering

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Reason says why a worker+rank was cleared.
type Reason uint8

const (
	// ReasonGap: a gap the transport did not fill (MaxPending events
	// buffered behind it, or open for GapTimeout).
	ReasonGap Reason = iota + 1
	// ReasonRestart: the publisher numbered again from its start, or its
	// ids jumped by more than MaxJump (see the package doc).
	ReasonRestart
)

func (r Reason) String() string {
	switch r {
	case ReasonGap:
		return "gap"
	case ReasonRestart:
		return "restart"
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Config tunes an Order.
type Config struct {
	// MaxPending bounds a worker+rank's reorder buffer; past it the gap is
	// declared unrecoverable. Default 4096; zero means the default.
	MaxPending int
	// GapTimeout is how long a gap may stay open before Expire declares it
	// unrecoverable. Default 30s; zero means the default. NB: on a NATS
	// cluster, a message whose stream leader died is republished only
	// after the publisher's ack timeout (5s) and a new leader's election,
	// while later messages sent after the election land first: a gap that
	// closes within seconds is the normal case there, and declaring it lost
	// would drop the worker's blocks, which the late events cannot bring
	// back (they are then duplicates). Measured with the 3-node cluster
	// test in internal/e2e: gaps of several seconds after a stream leader
	// is killed.
	GapTimeout time.Duration
	// MaxJump is how far an id may move from the last applied (above: a
	// gap; below: a duplicate) before it counts as a publisher restart.
	// Default 1<<20 (a million ids: a publisher of 100k events/s for 10 s,
	// well past any reordering window); zero means the default.
	MaxJump uint64
	// AcceptFirst takes the first id seen of each worker+rank as its
	// baseline whatever its value, instead of waiting for the ids below it
	// (a gap, up to MaxJump). For a stream known to have started over
	// while its publishers kept their ids (the shell clears the index
	// first). Default false.
	AcceptFirst bool
	// OnClear, when set, is called for each worker+rank the Order clears.
	// Default nil: no call.
	OnClear func(w kvevents.Worker, r Reason)
}

// DefaultConfig returns the defaults: MaxPending 4096, GapTimeout 30s,
// MaxJump 1<<20.
func DefaultConfig() Config {
	return Config{MaxPending: 4096, GapTimeout: 30 * time.Second, MaxJump: 1 << 20}
}

// Validate reports every problem.
func (c Config) Validate() error {
	var errs []error
	if c.MaxPending < 0 {
		errs = append(errs, fmt.Errorf("ordering: max pending %d < 0", c.MaxPending))
	}
	if c.GapTimeout < 0 {
		errs = append(errs, fmt.Errorf("ordering: gap timeout %v < 0", c.GapTimeout))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxPending <= 0 {
		c.MaxPending = d.MaxPending
	}
	if c.GapTimeout <= 0 {
		c.GapTimeout = d.GapTimeout
	}
	if c.MaxJump == 0 {
		c.MaxJump = d.MaxJump
	}
	return c
}

// Order enforces per worker+rank event_id order on a stream that may
// redeliver or reorder, and detects publisher restarts (package doc). It
// is a pure core: time is passed in; it does no I/O. Not safe for
// concurrent use.
//
// Invariant: for every worker+rank, the events Offer and Expire return
// have strictly increasing event ids between two Cleared events, and a
// Cleared is returned before any event that follows an unrecoverable gap
// or a restart.
type Order struct {
	cfg     Config
	last    map[kvevents.Worker]uint64
	pending map[kvevents.Worker]*pendingBuf
	stats   Stats
}

type pendingBuf struct {
	since time.Time
	evs   []kvevents.Event // sorted by EventID, unique
}

// Stats counts what an Order saw.
type Stats struct {
	Duplicates uint64 // events at or below the last applied id, dropped
	Gaps       uint64 // gaps opened (an id beyond last+1)
	Recovered  uint64 // gaps closed by the missing events arriving
	Resyncs    uint64 // gaps given up on: the worker+rank was cleared
	Restarts   uint64 // publisher restarts: the worker+rank was cleared
	Pending    int    // events waiting in reorder buffers
}

// New returns an Order starting from the given last ids (nil: every
// worker+rank starts before id 1; ids 0 and 1 are both accepted first).
func New(cfg Config, last map[kvevents.Worker]uint64) *Order {
	o := &Order{cfg: cfg.withDefaults(), last: make(map[kvevents.Worker]uint64, len(last)),
		pending: make(map[kvevents.Worker]*pendingBuf)}
	for k, v := range last {
		o.last[k] = v
	}
	return o
}

// Offer takes one event and appends to out the events now ready to apply,
// in order. now is only used to time gaps.
func (o *Order) Offer(out []kvevents.Event, ev *kvevents.Event, now time.Time) []kvevents.Event {
	w := ev.Worker()
	last, seen := o.last[w]
	id := ev.EventID
	switch {
	case !seen && (id <= 1 || o.cfg.AcceptFirst), seen && id == last+1 && id != 0: // NB: last+1 wraps at 2^64-1
		// Publishers number from 0 or 1. NB: a first event beyond 1 is a
		// gap like any other (a publisher's retried batch can land after a
		// later one); if the stream never fills it (retention dropped the
		// start), it is resynced after GapTimeout.
		o.last[w] = id
		out = append(out, *ev)
		if pb := o.pending[w]; pb != nil {
			out = o.drain(out, w, pb)
		}
		return out
	case seen && id <= last:
		if (ev.Kind == kvevents.KindCleared && id <= 1) || last-id > o.cfg.MaxJump {
			return o.restart(out, w, ev)
		}
		o.stats.Duplicates++
		return out
	case id-last > o.cfg.MaxJump: // last is 0 when !seen
		return o.restart(out, w, ev)
	}
	pb := o.pending[w]
	if pb == nil {
		pb = &pendingBuf{since: now}
		o.pending[w] = pb
		o.stats.Gaps++
	}
	i := sort.Search(len(pb.evs), func(i int) bool { return pb.evs[i].EventID >= id })
	if i < len(pb.evs) && pb.evs[i].EventID == id {
		o.stats.Duplicates++
		return out
	}
	pb.evs = append(pb.evs, kvevents.Event{})
	copy(pb.evs[i+1:], pb.evs[i:])
	pb.evs[i] = *ev
	o.stats.Pending++
	if len(pb.evs) > o.cfg.MaxPending {
		out = o.resync(out, w, pb)
	}
	return out
}

// restart drops w's buffered events (the old publisher's), clears w and
// applies ev as the new baseline.
func (o *Order) restart(out []kvevents.Event, w kvevents.Worker, ev *kvevents.Event) []kvevents.Event {
	o.stats.Restarts++
	if pb := o.pending[w]; pb != nil {
		o.stats.Pending -= len(pb.evs)
		delete(o.pending, w)
	}
	if o.cfg.OnClear != nil {
		o.cfg.OnClear(w, ReasonRestart)
	}
	if ev.Kind != kvevents.KindCleared {
		out = append(out, kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, Kind: kvevents.KindCleared,
			EventID: ev.EventID - min(ev.EventID, 1)})
	}
	o.last[w] = ev.EventID
	return append(out, *ev)
}

// drain moves the consecutive head of pb to out.
func (o *Order) drain(out []kvevents.Event, w kvevents.Worker, pb *pendingBuf) []kvevents.Event {
	last := o.last[w]
	n := 0
	for n < len(pb.evs) && pb.evs[n].EventID <= last+1 {
		if pb.evs[n].EventID == last+1 {
			out = append(out, pb.evs[n])
			last++
		} else {
			o.stats.Duplicates++
		}
		n++
	}
	o.last[w] = last
	o.stats.Pending -= n
	pb.evs = pb.evs[n:]
	if len(pb.evs) == 0 {
		delete(o.pending, w)
		o.stats.Recovered++
	}
	return out
}

// resync gives up on w's gap: a Cleared, then everything buffered.
func (o *Order) resync(out []kvevents.Event, w kvevents.Worker, pb *pendingBuf) []kvevents.Event {
	o.stats.Resyncs++
	if o.cfg.OnClear != nil {
		o.cfg.OnClear(w, ReasonGap)
	}
	out = append(out, kvevents.Event{WorkerID: w.ID, DPRank: w.Rank, Kind: kvevents.KindCleared,
		EventID: pb.evs[0].EventID - 1})
	out = append(out, pb.evs...)
	o.last[w] = pb.evs[len(pb.evs)-1].EventID
	o.stats.Pending -= len(pb.evs)
	delete(o.pending, w)
	return out
}

// Expire gives up on gaps open for longer than GapTimeout at now.
func (o *Order) Expire(out []kvevents.Event, now time.Time) []kvevents.Event {
	if len(o.pending) == 0 {
		return out
	}
	ws := make([]kvevents.Worker, 0, len(o.pending))
	for w, pb := range o.pending {
		if now.Sub(pb.since) >= o.cfg.GapTimeout {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Less(ws[j]) })
	for _, w := range ws {
		out = o.resync(out, w, o.pending[w])
	}
	return out
}

// Forget drops every rank of a worker (it left the fleet, or registered
// anew: its next events start a fresh baseline).
func (o *Order) Forget(id uint64) {
	for w := range o.last {
		if w.ID == id {
			delete(o.last, w)
		}
	}
	for w, pb := range o.pending {
		if w.ID == id {
			o.stats.Pending -= len(pb.evs)
			delete(o.pending, w)
		}
	}
}

// Reset forgets every worker+rank (the stream itself started over).
func (o *Order) Reset() {
	clear(o.last)
	clear(o.pending)
	o.stats.Pending = 0
}

// Last returns a copy of the last applied id per worker+rank.
func (o *Order) Last() map[kvevents.Worker]uint64 {
	m := make(map[kvevents.Worker]uint64, len(o.last))
	for k, v := range o.last {
		m[k] = v
	}
	return m
}

// Stats returns the counters.
func (o *Order) Stats() Stats { return o.stats }
