// Package zmqsub ingests vLLM/SGLang KV events published on ZMQ
// (DESIGN.md §2, transport 2) with pure-Go ZMQ (go-zeromq/zmq4).
//
// Two topologies:
//   - connect (vLLM's default): one SUB per engine (and per data-parallel
//     rank: rank r listens on the PUB port + r) dials the engine's bound
//     PUB endpoint. The Source names the worker id.
//   - bind (centralized): one SUB per Config.Binds endpoint, many engine
//     PUBs connect to it; the topic "kv@<pod>@<model>" tells workers apart
//     (Config.Resolve maps pod and model to a worker id, default a stable
//     hash of the pod). A pod no worker has yet (ErrUnknownPod) has its
//     messages held, in order, up to HoldFor and HoldMax, and applied when
//     Kick finds it resolvable; a model mismatch (ErrModelMismatch) drops
//     the message. Every refusal is counted (Stats, Config.OnIngest).
//
// Frames are [topic, seq (8 bytes big-endian), payload]. seq is tracked per
// publisher (worker+rank; bind mode: topic and socket) by ordering.Seq;
// the first seq seen is the baseline. ZMQ never redelivers, so a seq at or
// below the last one (also equal: a restart after exactly one message) or
// more than MaxJump above it is a publisher restart: the worker+rank (each
// rank its payloads named) is cleared before the message applies. A gap asks
// the engine's replay endpoint (a DEALER sends the 8-byte start seq; the
// engine streams (seq, payload) until seq -1 with an empty payload; 3- and
// 4-frame replies are accepted). A gap that cannot be replayed clears that
// worker+rank and counts a resync; a Cleared event is emitted so downstream indexes (and the bridge's
// stream) drop the worker's stale state.
//
// Event ids are assigned densely per worker+rank in seq order (seq is per
// message, a message holds several events), starting after Config.StartID
// (so a restarted bridge continues where the stream stopped).
//
// Subscriber is safe for concurrent use of Stats; Run owns all sockets.
package zmqsub
