package frontend

import (
	"sync/atomic"
	"time"
)

// A hold is a disaggregated request's prefill-hop booking in the router
// (request id "<id>/prefill", DESIGN.md §10), from its routing decision
// to its release. It is the prefill hop's flight: the hop that routed it
// owns it and releases it exactly once, by free when the prefill answer
// arrived (its load leaves the prefill pool) or by fail when the prefill
// failed, was cancelled or was never sent; later calls do nothing. Each
// release lets queued requests try again (kick). The decode hop's
// booking is a flight of its own (flight.go).
//
// Unlike a flight, a hold is safe for concurrent use: SGLang's prefill
// request runs beside the decode hop (sglang.go), and either side may
// end it.
type hold struct {
	id   string
	bk   tracker
	kick func() // after the release; never nil
	done atomic.Bool
}

// prefillID is the router's request id of request id's prefill hop.
func prefillID(id string) string { return id + "/prefill" }

func newHold(id string, bk tracker, kick func()) *hold {
	return &hold{id: id, bk: bk, kick: kick}
}

// free releases the booking of a prefill that answered at now; it
// reports whether this call released it.
func (h *hold) free(now time.Time) bool {
	if h == nil || !h.done.CompareAndSwap(false, true) {
		return false
	}
	_ = h.bk.Free(h.id, now)
	h.kick()
	return true
}

// fail releases the booking of a prefill that failed, was cancelled or
// was never sent, at now; it reports whether this call released it.
func (h *hold) fail(now time.Time) bool {
	if h == nil || !h.done.CompareAndSwap(false, true) {
		return false
	}
	_ = h.bk.Fail(h.id, now)
	h.kick()
	return true
}
