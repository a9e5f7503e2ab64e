package frontend

import (
	"context"
	"time"
)

// The router books each decision and ends each flight later
// (router.Options.Deferred, FreeLater): the route returns once it has
// decided, and settleLoop applies the bookkeeping off the request path,
// woken after each route and each end. A route that comes before the
// settler has run applies what is pending itself, so no decision sees
// stale load (router/settle.go); the settler only takes that work off
// the routes' latency when requests are further apart than a settle.

// kickSettle wakes settleLoop without waiting.
func (s *Server) kickSettle() {
	select {
	case s.settle <- struct{}{}:
	default:
	}
}

// settleLoop settles the router's deferred bookkeeping whenever kicked,
// until ctx is done. NB: it settles once more on the way out, so a stopped
// server leaves no booking or end pending (and reports their bookings):
// what state dumps and snapshots read after Run returns is complete.
// Calls after that settle on their own.
func (s *Server) settleLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			s.rt.Settle()
			return
		case <-s.settle:
			s.rt.Settle()
		}
	}
}

// laterTracker is the router as a flight's tracker: its Free is the
// router's FreeLater, settled by settleLoop.
type laterTracker struct{ s *Server }

var _ tracker = laterTracker{}

func (t laterTracker) PrefillDone(id string, now time.Time) error {
	return t.s.rt.PrefillDone(id, now)
}

func (t laterTracker) Touch(id string, now time.Time) error { return t.s.rt.Touch(id, now) }

func (t laterTracker) Fail(id string, now time.Time) error { return t.s.rt.Fail(id, now) }

// Free queues the end (its error, an unknown id, was ignored by every
// flight anyway).
func (t laterTracker) Free(id string, now time.Time) error {
	t.s.rt.FreeLater(id, now)
	t.s.kickSettle()
	return nil
}
