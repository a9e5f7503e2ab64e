// Package sink takes a fleet's KV events into a router's index: the
// frontend's event sink (eventplane.Sink through frontend.Server.Apply).
//
// A Sink refuses an event of a dp rank its worker does not have (ErrRank:
// the router never routes there, so its blocks could only fill the
// index), turns a panic below it into an error (ErrApplyPanic: the event
// transport's goroutine survives), runs the event-fed indexes' sticky
// writers (Writer, Run, Flush) and counts what became of every event:
// kvrouter_events_applied_total, kvrouter_events_rejected_total{reason},
// kvrouter_event_faults_total{reason}, kvrouter_event_lag_seconds, and
// per worker for /debug/index (Counts).
//
// Invariant: an event is counted once, when its writer reports it
// applied or rejected (visible to lookups, or never), not when queued.
//
// Building one follows the router's construction: New, then Writer for
// each event-fed index the router asks for, then Attach with the built
// router; Apply is used only after Attach.
//
// A Sink is safe for concurrent use.
package sink
