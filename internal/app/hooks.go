package app

import "github.com/kvrouter/kvrouter/kvevents"

// ResetWorkerEvents forgets what the event plane knows of worker id, for a
// worker that restarted without its events saying so (a new registration
// epoch, DESIGN.md §2): its index entries on ranks 0..ranks-1 are cleared
// by a Cleared event each, queued behind the worker's events already
// received (so none of them lands after the clear), and the NATS
// subscriber's dedup baseline of the worker is dropped (its new life may
// number from 1 again). ranks < 1 means 1.
func (s *Serve) ResetWorkerEvents(id uint64, ranks int) {
	if rep := s.Replica(); rep != nil {
		rep.Forget(id)
	}
	for r := range max(ranks, 1) {
		ev := kvevents.Event{WorkerID: id, DPRank: uint32(r), Kind: kvevents.KindCleared}
		_ = s.fe.Apply(&ev)
	}
}
