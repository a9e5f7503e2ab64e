package indexer

import (
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
)

// InsertSeqBooked records at now a booking of the blocks seqs (sequence
// hashes) on w made at booked (<= now), for a caller that reports a
// booking only when it ends: its pairs expire at booked + TTL, as
// InsertSeq at booked would have set them, and a pair that a later
// booking already holds keeps its later expiry. A booking already expired
// at now is not recorded.
//
// Keeping the later expiry preserves the prefix closure (approxclosed.go)
// whatever order bookings end in: every booking covers a prompt from its
// first block, so a block's expiry, the latest of the bookings covering
// it, is never below its descendants'. The generation goes to its place
// in the queue by expiry (usually the tail: bookings mostly end in the
// order they were made), so sweeps still drop pairs in expiry order.
// Lookups between bookings made at t1 <= t2 then answer as if each had
// been recorded by InsertSeq at its time, for every booking already
// reported.
func (a *Approx) InsertSeqBooked(w kvevents.Worker, seqs []uint64, booked, now time.Time) {
	t, exp := now.UnixNano(), booked.UnixNano()+a.ttl
	if exp <= t {
		return
	}
	a.insert(w, seqs, true, t, exp, true)
}
