// Package loadsync shares active load and session affinity between router
// replicas over a core NATS subject (DESIGN.md §4, replicas).
//
// Each replica publishes its routing decisions, prefill-done and free
// events, and session bindings; the others apply them to their load
// tracker through Applier. Messages are batched (at most Config.MaxBatch,
// default 256, or Config.MaxDelay, default 1ms), best-effort (no
// JetStream, drops counted when the queue is full), and a replica ignores
// its own (Origin). KindHeartbeat says a replica is alive (internal/replica
// drops a silent replica's bookings). Load state converges from this sync; a lost message
// skews load until the request finishes or the tracker's stale sweep
// removes it, and a lost binding costs affinity, never correctness. Prefix
// state does not travel here: it converges from the KV events stream.
//
// Sync is safe for concurrent use; New starts nothing, Run does.
package loadsync
