package router

import (
	"fmt"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Free releases request id (finished, failed or cancelled), or removes it
// from the queue if it is still waiting.
func (r *Router) Free(id string, now time.Time) error {
	r.lock()
	w, book, err := r.freeLockedAt(id, now)
	r.mu.Unlock()
	if book && err == nil {
		r.events.OnBooking(Booking{Kind: BookFree, ID: id, Worker: w})
	}
	return err
}

// freeLockedAt is Free under r.mu: it also returns the request's worker
// and whether OnBooking wants its BookFree.
func (r *Router) freeLockedAt(id string, now time.Time) (kvevents.Worker, bool, error) {
	if e, inPrefill, ok := r.loads.Request(id); ok && !inPrefill {
		r.fin.observe(r.loads.Slot(e.Worker), now) // a completion
	}
	w, book := r.localWorker(id)
	return w, book, r.freeLocked(id, now)
}

func (r *Router) freeLocked(id string, now time.Time) error {
	if r.queue != nil {
		if it, _, ok := r.queue.Remove(id); ok {
			putPending(it.Value)
			return nil
		}
	}
	r.predictEnded(id, now)
	if err := r.loads.Free(id); err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownRequest, err)
	}
	if len(r.sessions) > 0 {
		delete(r.sessions, id)
	}
	return nil
}

// Fail releases request id because dispatching it to its worker failed,
// and drops its session binding so the next request of the session routes
// afresh.
func (r *Router) Fail(id string, now time.Time) error {
	r.lock()
	e, _, ok := r.loads.Request(id)
	if s := r.sessions[id]; ok && s != "" {
		if w, bound := r.aff.Get(s, now); bound && w == e.Worker {
			r.aff.Drop(s)
		}
	}
	err := r.freeLocked(id, now)
	r.mu.Unlock()
	if ok && err == nil && r.events.OnBooking != nil {
		r.events.OnBooking(Booking{Kind: BookFree, ID: id, Worker: e.Worker})
	}
	return err
}
