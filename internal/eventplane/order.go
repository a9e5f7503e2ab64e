package eventplane

import (
	"sort"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Order enforces per worker+rank event_id order on a stream that may
// redeliver or reorder (DESIGN.md §2 semantics). It is a pure core: time is
// passed in; it does no I/O. Not safe for concurrent use.
//
// Invariant: for every worker+rank, the events Offer and Expire return have
// strictly increasing event ids, and a Cleared is returned before any event
// that follows an unrecoverable gap.
type Order struct {
	// MaxPending bounds a worker+rank's reorder buffer; past it the gap is
	// declared unrecoverable. Default 4096.
	MaxPending int
	// GapTimeout is how long a gap may stay open before Expire declares it
	// unrecoverable. Default 30s. NB: on a NATS cluster, a message whose
	// stream leader died is republished only after the publisher's ack
	// timeout (5s) and a new leader's election, while later messages sent
	// after the election land first: a gap that closes within seconds is
	// the normal case there, and declaring it lost would drop the worker's
	// blocks, which the late events cannot bring back (they are then
	// duplicates). Measured with the 3-node cluster test in internal/e2e:
	// gaps of several seconds after a stream leader is killed.
	GapTimeout time.Duration
	// OnResync, when set, is called for each worker+rank cleared after an
	// unrecoverable gap.
	OnResync func(w kvevents.Worker)

	last    map[kvevents.Worker]uint64
	pending map[kvevents.Worker]*pendingBuf
	stats   OrderStats
}

type pendingBuf struct {
	since time.Time
	evs   []kvevents.Event // sorted by EventID, unique
}

// OrderStats counts what Order saw.
type OrderStats struct {
	Duplicates uint64 // events at or below the last applied id, dropped
	Gaps       uint64 // gaps opened (an id beyond last+1)
	Recovered  uint64 // gaps closed by the missing events arriving
	Resyncs    uint64 // gaps given up on: the worker+rank was cleared
	Pending    int    // events waiting in reorder buffers
}

// NewOrder returns an Order starting from the given last ids (nil: every
// worker+rank starts before id 1; ids 0 and 1 are both accepted first).
func NewOrder(last map[kvevents.Worker]uint64) *Order {
	o := &Order{last: make(map[kvevents.Worker]uint64, len(last)), pending: make(map[kvevents.Worker]*pendingBuf)}
	for k, v := range last {
		o.last[k] = v
	}
	return o
}

func (o *Order) maxPending() int {
	if o.MaxPending > 0 {
		return o.MaxPending
	}
	return 4096
}

func (o *Order) gapTimeout() time.Duration {
	if o.GapTimeout > 0 {
		return o.GapTimeout
	}
	return 30 * time.Second
}

// Offer takes one event and appends to out the events now ready to apply,
// in order. now is only used to time gaps.
func (o *Order) Offer(out []kvevents.Event, ev *kvevents.Event, now time.Time) []kvevents.Event {
	w := ev.Worker()
	last, seen := o.last[w]
	switch {
	case !seen && ev.EventID <= 1, seen && ev.EventID == last+1:
		// Publishers number from 0 or 1. NB: a first event beyond 1 is a
		// gap like any other (a publisher's retried batch can land after a
		// later one); if the stream never fills it (retention dropped the
		// start), it is resynced after GapTimeout.
		o.last[w] = ev.EventID
		out = append(out, *ev)
		if pb := o.pending[w]; pb != nil {
			out = o.drain(out, w, pb)
		}
		return out
	case ev.EventID <= last:
		o.stats.Duplicates++
		return out
	}
	pb := o.pending[w]
	if pb == nil {
		pb = &pendingBuf{since: now}
		o.pending[w] = pb
		o.stats.Gaps++
	}
	i := sort.Search(len(pb.evs), func(i int) bool { return pb.evs[i].EventID >= ev.EventID })
	if i < len(pb.evs) && pb.evs[i].EventID == ev.EventID {
		o.stats.Duplicates++
		return out
	}
	pb.evs = append(pb.evs, kvevents.Event{})
	copy(pb.evs[i+1:], pb.evs[i:])
	pb.evs[i] = *ev
	o.stats.Pending++
	if len(pb.evs) > o.maxPending() {
		out = o.resync(out, w, pb)
	}
	return out
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
	if o.OnResync != nil {
		o.OnResync(w)
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
		if now.Sub(pb.since) >= o.gapTimeout() {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Less(ws[j]) })
	for _, w := range ws {
		out = o.resync(out, w, o.pending[w])
	}
	return out
}

// Forget drops every rank of a worker (it left the fleet).
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

// Last returns a copy of the last applied id per worker+rank.
func (o *Order) Last() map[kvevents.Worker]uint64 {
	m := make(map[kvevents.Worker]uint64, len(o.last))
	for k, v := range o.last {
		m[k] = v
	}
	return m
}

// Stats returns the counters.
func (o *Order) Stats() OrderStats { return o.stats }
