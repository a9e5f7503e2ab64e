// Package eventplane carries KV events from workers to router replicas over
// NATS JetStream (DESIGN.md §2, transport 1).
//
// Conn is a NATS connection with JetStream: Connect dials an external
// server or cluster (user/password, token, nkey, creds, TLS), or, with no
// URL, StartEmbedded runs an in-process server on 127.0.0.1 (random port,
// temporary store directory unless configured). One stream holds every KV
// event, subjects kvrouter.<model>.kv.<worker_id>, retention bounded by age
// and bytes.
//
// Publisher batches events per worker (one stream message = one worker's
// events, in event_id order per rank), numbers them when asked, and retries
// until the stream acknowledges, with a Nats-Msg-Id so the server drops
// duplicates. Subscriber consumes the stream with an ordered consumer from
// a start sequence (a snapshot's), dedups by (worker, rank, event_id),
// reorders, and clears a worker+rank whose gap the stream cannot fill
// (Order, a pure core). Checkpoint gives a consistent (index, Position)
// pair for snapshots.
//
// # Envelope
//
// A stream message's payload is self-describing by its first byte: a JSON
// object is one RouterEvent exactly as Dynamo encodes it; a JSON array is a
// batch of them; a msgpack map is one RouterEvent with the same field
// names; a msgpack array is a batch. See EncodeEnvelope.
//
// # What converges from where
//
// Prefix state (the index) converges from the stream: it is durable,
// ordered per worker, and replayable, so every replica that applies it from
// a snapshot's sequence reaches the same index (tests compare dump hashes).
// Load state (active prefill/decode per worker) and session affinity
// converge from best-effort load sync between replicas (package loadsync):
// a lost message skews a load estimate until the request finishes or the
// stale sweep removes it, never the index.
//
// Sub-packages: zmqsub (vLLM/SGLang ZMQ ingestion with replay), loadsync
// (router replica load sharing). Discovery and snapshots live in
// internal/discovery and internal/snapshot.
//
// Conn, Publisher and Subscriber are safe for concurrent use; constructors
// start no goroutines, Run(ctx) does. Order is not safe for concurrent use.
package eventplane
