// Package benchevents measures KV event ingestion end to end through the
// embedded NATS JetStream: publisher -> stream -> subscriber -> sticky
// writers -> index (visible to FindMatches), and a replica's catch-up from
// snapshot + stream. It is the library behind `kvrouter-study bench events`.
// Run starts and stops everything it uses; not safe for concurrent Runs on
// one Config.
//
// Lag is measured per event from its Publish call (the timestamp is taken
// just before it, so time blocked in Publish counts) to the index writer's
// OnApplied (after the event is applied, visible to FindMatches); the
// subscriber's hand-off to the writers is reported too, which splits the
// transport's share from the index's. With a Rate, the pacer publishes
// every event whose due time has passed and sleeps until the next one; Go
// timers wake about every millisecond, so at 100k events/s it publishes
// bursts of ~100 events per ms (events are stamped individually, so an
// oversleeping pacer adds no lag of its own; a starved one catches up
// with a larger burst, which is real queueing at the offered rate).
// Process CPU time is reported beside wall time: on a shared machine,
// blocks per CPU-second is the steadier figure.
package benchevents
