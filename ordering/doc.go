// Package ordering is the pure core of KV event ordering and gap recovery
// (DESIGN.md §2 semantics): what to apply, in which order, and when to
// clear a worker+rank, given events that a transport may redeliver,
// reorder, lose, or that a restarted publisher numbers again from the
// start. Shells feed it (internal/eventplane's NATS subscriber, the ZMQ
// subscriber in internal/eventplane/zmqsub) and so can a Go gateway that
// embeds the router with its own transport.
//
// Two trackers:
//
//   - Order: per worker+rank event ids (Dynamo's event_id, numbered by the
//     publisher). Redeliveries are dropped, reordered events are buffered
//     until the gap fills (bounded by Config.MaxPending and GapTimeout),
//     and an unrecoverable gap clears the worker+rank (a Cleared event is
//     emitted before the events that follow it).
//   - Seq: per publisher message sequence numbers (vLLM/SGLang ZMQ frames),
//     classified as next, gap or restart; the shell replays or clears.
//
// # Publisher restarts
//
// A publisher that restarts numbers again from its start (vLLM's ZMQ seq
// and event ids from 0, others from 1), so its new ids look like
// duplicates of the old ones. The rules, shared by both trackers:
//
//   - An id more than Config.MaxJump (default 1<<20) below the last applied
//     is a restart, not a duplicate: a transport redelivers only recent
//     messages (JetStream: the publisher's unacknowledged window, at most
//     thousands of events), never a million ids back.
//   - An id more than MaxJump above the last applied (or, for a worker+rank
//     never seen, above MaxJump) is a restart too: no gap that large can be
//     filled by reordering, and waiting GapTimeout for it would only delay
//     the same outcome. The baseline is reset to the new id. A hostile id
//     (10^12) thus costs the worker+rank one clear, not its future: the
//     real ids that follow are far below the new baseline and reset it back.
//   - Order: a Cleared event with id 0 or 1 at or below the last applied is
//     a restart: publishers begin with a Cleared (vLLM's AllBlocksCleared
//     after a restart; kvrouter's mocker at start), and a transport never
//     redelivers a publisher's first message after later ones were applied.
//     This catches a restart after a short life, whose new ids are within
//     MaxJump of the old ones.
//   - Seq: ZMQ PUB/SUB never redelivers, so on a live subscription a seq at
//     or below the last one is a restart (this covers the restart after
//     exactly one message, whose first seq equals the last seen).
//
// A restart clears exactly that worker+rank and counts in Stats.Restarts.
//
// The package does no I/O, reads no clock (now is passed in) and starts no
// goroutines. Order and Seq are not safe for concurrent use.
package ordering
