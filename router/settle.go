package router

import (
	"fmt"
	"time"

	"github.com/kvrouter/kvrouter/loads"
)

// Deferred bookkeeping (Options.Deferred, FreeLater). A decision needs the
// load and predictions that every earlier decision and end left behind,
// not that they were recorded before the earlier call returned. So with
// Options.Deferred, Route appends its booking (the load tracker's Add, the
// predicted side index's insert) to r.backlog and returns; FreeLater
// appends a Free. The backlog is applied, in order, by Settle, and by
// whichever call takes the router's lock first (lock): every call that
// reads the load or the predicted index, a decision above all, sees the
// state it would have seen without deferral, so decisions are the same.
// What moves is who pays for the bookkeeping: a shell that calls Settle
// off the request path (a goroutine woken after each route and end)
// takes it off the route's latency, unless the next route comes first.

// laterKind is what a deferred operation does.
type laterKind uint8

const (
	laterBook laterKind = iota // Route's booking
	laterFree                  // FreeLater
)

// later is one deferred operation. Its buffers are kept in r.backlog's
// capacity and reused.
type later struct {
	kind    laterKind
	e       loads.Entry // laterBook; e.Blocks aliases ids
	ids     []uint64    // laterBook: the prompt's prefix ids, copied
	predict bool        // laterBook: insert into the predicted index too
	id      string      // laterFree
	now     time.Time
}

// lock takes the router's lock and applies the backlog: every reader of
// the router's state goes through it.
func (r *Router) lock() {
	r.mu.Lock()
	if len(r.backlog) > 0 {
		r.settleLocked()
	}
}

// settleLocked applies the backlog in order. r.mu is held.
func (r *Router) settleLocked() {
	for i := range r.backlog {
		l := &r.backlog[i]
		switch l.kind {
		case laterBook:
			// Invariant: Route's decision checked the id is not active
			// and the entry is well formed, with the backlog before it
			// applied, and nothing but this booking changed since.
			if err := r.loads.Add(l.e, l.now); err != nil {
				panic(fmt.Sprintf("router: deferred booking: %v", err))
			}
			if l.predict {
				r.predict.InsertSeq(l.e.Worker, l.ids, l.now)
			}
			l.e = loads.Entry{}
		case laterFree:
			w, book, err := r.freeLockedAt(l.id, l.now)
			if book && err == nil {
				r.outbox = append(r.outbox, Booking{Kind: BookFree, ID: l.id, Worker: w})
			}
			l.id = ""
		}
	}
	r.backlog = r.backlog[:0]
}

// deferBooking appends e (and the predicted insert when predict) to the
// backlog, copying e.Blocks. r.mu is held.
func (r *Router) deferBooking(e loads.Entry, predict bool, now time.Time) {
	l := r.nextLater()
	l.ids = append(l.ids[:0], e.Blocks...)
	e.Blocks = l.ids
	l.kind, l.e, l.predict, l.now = laterBook, e, predict, now
}

// FreeLater is Free applied later: by Settle or by the next call that takes
// the router's lock, in its order among the routes and ends. An unknown id
// is ignored (Free's error is not reported); the BookFree booking, if any,
// is reported by the Settle that follows. Use it where Free's error would
// be ignored and the caller's latency matters.
func (r *Router) FreeLater(id string, now time.Time) {
	r.mu.Lock()
	l := r.nextLater()
	l.kind, l.id, l.now = laterFree, id, now
	r.mu.Unlock()
}

// nextLater appends an operation to the backlog, reusing the buffers of
// the one that held its place before. r.mu is held.
func (r *Router) nextLater() *later {
	if len(r.backlog) < cap(r.backlog) {
		r.backlog = r.backlog[:len(r.backlog)+1]
	} else {
		r.backlog = append(r.backlog, later{})
	}
	return &r.backlog[len(r.backlog)-1]
}

// Settle applies the deferred bookings and frees (Options.Deferred,
// FreeLater), and reports the BookFree bookings they made. Any goroutine;
// it never changes a decision, only who pays for the bookkeeping.
func (r *Router) Settle() {
	r.lock()
	out := r.outbox
	r.outbox = nil
	r.mu.Unlock()
	for _, b := range out {
		r.events.OnBooking(b)
	}
}

// SettleStats is the deferred bookkeeping's state (Router.SettleStats).
type SettleStats struct {
	Unsettled int // operations deferred and not yet applied
	// RouteSettled counts the routes that found deferred operations and
	// applied them first: their latency includes that work.
	RouteSettled uint64
}

// SettleStats returns the deferred bookkeeping's state, without settling.
func (r *Router) SettleStats() SettleStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return SettleStats{Unsettled: len(r.backlog), RouteSettled: r.routeSettled}
}
