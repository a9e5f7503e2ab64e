package router

import "time"

// The predicted side index (Config.Predict) only matters once a booking
// has ended. While a request is active, Predict.Active credits each
// worker with the longest prefix of a prompt that the worker's active
// requests hold, and that is never below what the active request's own
// prediction would add: a booking covers its prompt from the first
// block, and the overlap with a union of such prompts is the largest
// overlap with one of them. So a local booking is recorded in the
// predicted index when it is freed or fails (Free, Fail), with the expiry
// it would have had (indexer.Approx.InsertSeqBooked: booked + TTL), and
// not at all when it ran longer than the TTL (most requests: the default
// TTL is 500 ms). Decisions are the same as with the booking recorded at
// routing time; routing no longer walks the prompt's blocks a third time.
//
// Requests released otherwise need nothing: RemoveWorker drops the
// worker's predictions anyway, and Sweep releases a request only after
// Loads.StaleAfter without progress, when its prediction has expired
// (predictAtEnd requires StaleAfter >= TTL). Remote bookings (load sync)
// are still recorded when they arrive: their end may never be reported.

// predictAtEnd reports whether cfg lets local bookings reach the predicted
// index when they end.
func predictAtEnd(cfg Config) bool {
	st := cfg.Loads.StaleAfter
	return cfg.Predict.TTL > 0 && cfg.Predict.Active && (st == 0 || st >= cfg.Predict.TTL)
}

// predictEnded records active local request id's booking in the
// predicted index as it ends at now (before the tracker releases it).
func (r *Router) predictEnded(id string, now time.Time) {
	if !r.predictAtEnd {
		return
	}
	e, at, ok := r.loads.Routed(id)
	if !ok || e.Origin != "" || len(e.Blocks) == 0 {
		return
	}
	r.predict.InsertSeqBooked(e.Worker, e.Blocks, at, now)
}
