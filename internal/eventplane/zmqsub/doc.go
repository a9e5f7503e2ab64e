// Package zmqsub ingests vLLM/SGLang KV events published on ZMQ
// (DESIGN.md §2, transport 2) with pure-Go ZMQ (go-zeromq/zmq4).
//
// Two topologies:
//   - connect (vLLM's default): one SUB per engine (and per data-parallel
//     rank: rank r listens on the PUB port + r) dials the engine's bound
//     PUB endpoint. The Source names the worker id. Sources are fixed
//     (Config.Sources) or come and go at run time (Add, Remove: pods a
//     discovery finds; removing one closes its sockets and drops its seq
//     state, so the same worker at a new address starts afresh).
//   - bind (centralized): one SUB per Config.Binds endpoint, many engine
//     PUBs connect to it; the topic "kv@<pod>@<model>" tells workers apart
//     (Config.Resolve maps pod and model to a worker id, default a stable
//     hash of the pod). A pod no worker has yet (ErrUnknownPod) has its
//     messages held, in order, up to HoldFor, HoldMax messages and
//     HoldMaxBytes (all pods together; exported as the bounds store
//     "zmq_hold", HoldStore), and applied when Kick finds it resolvable; a
//     model mismatch (ErrModelMismatch) drops the message. Every refusal
//     is counted (Stats, Config.OnIngest). Messages received and not yet
//     handled wait bounded in count (256) and bytes (4 × MaxMessageBytes;
//     the store "zmq_inflight", InflightStore); beyond, the publishers
//     wait in TCP.
//
// Trust boundary: ZMQ here has no authentication. Any publisher that
// reaches a bound endpoint can add or clear the blocks of any pod (it
// names the pod in its topic), so a bind endpoint must be reachable by
// the engines only: bind it on the engines' network, not a public
// interface, and restrict it (the Helm chart's NetworkPolicy admits the
// engine pods only). Whoever reaches it can still not exhaust memory:
// every socket, bound or dialed (SUB, replay DEALER), reads through
// zmqguard, which drops a peer announcing a message over
// Config.MaxMessageBytes before zmq4 allocates it (Config.OnPeerDropped
// counts them).
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
// Subscriber is safe for concurrent use of Stats, Add, Remove and Sources;
// Run owns all sockets.
package zmqsub
