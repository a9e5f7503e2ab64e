// Package zmqsub ingests vLLM/SGLang KV events published on ZMQ
// (DESIGN.md §2, transport 2) with pure-Go ZMQ (go-zeromq/zmq4).
//
// Two topologies:
//   - connect (vLLM's default): one SUB per engine (and per data-parallel
//     rank: rank r listens on the PUB port + r) dials the engine's bound
//     PUB endpoint. The Source names the worker id.
//   - bind (centralized): one SUB binds Config.Bind and many engine PUBs
//     connect to it; the topic "kv@<pod-address>@<model>" tells workers
//     apart and maps to a worker id (Config.TopicWorker, default: a Source
//     with that Topic, else a stable hash of the pod address).
//
// Frames are [topic, seq (8 bytes big-endian), payload]. seq is tracked per
// publisher (worker+rank); the first seq seen is the baseline. A gap asks
// the engine's replay endpoint (a DEALER sends the 8-byte start seq; the
// engine streams (seq, payload) until seq -1 with an empty payload; 3- and
// 4-frame replies are accepted). A gap that cannot be replayed, or seq
// going backwards (engine restart), clears that worker+rank and counts a
// resync; a Cleared event is emitted so downstream indexes (and the bridge's
// stream) drop the worker's stale state.
//
// Event ids are assigned densely per worker+rank in seq order (seq is per
// message, a message holds several events), starting after Config.StartID
// (so a restarted bridge continues where the stream stopped).
//
// Subscriber is safe for concurrent use of Stats; Run owns all sockets.
package zmqsub
