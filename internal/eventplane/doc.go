// Package eventplane carries KV events from workers to router replicas over
// NATS JetStream (DESIGN.md §2, transport 1).
//
// Conn is a NATS connection with JetStream: Connect dials an external
// server or cluster (user/password, token, nkey, creds, TLS), or, with no
// URL, StartEmbedded runs an in-process server on 127.0.0.1 (random port,
// temporary store directory unless configured; the Conn's own client is
// connected in-process, other processes use TCP). One stream holds every KV
// event, subjects kvrouter.<model>.kv.<worker_id>, retention bounded by age
// and bytes.
//
// Publisher batches events per worker (one stream message = one worker's
// events, in event_id order per rank), numbers them when asked, publishes
// asynchronously with at most MaxInflight unacknowledged messages, and
// retries until the stream acknowledges, with a Nats-Msg-Id so the server
// drops duplicates. Batches are bounded by size (MaxBatch) and time
// (Linger, default 1ms), and sent at once when the pipeline is idle (no
// message awaiting acknowledgement). Subscriber consumes the stream with
// an ordered consumer from a start sequence (a snapshot's), drops events
// whose payload names another worker than the message's subject (the
// subject is the publisher's identity), dedups by (worker, rank,
// event_id), reorders, clears a worker+rank whose gap the stream cannot
// fill or whose publisher started over (package ordering, a pure core),
// and counts every refusal and fault (SubscriberEvents.OnIngest). Checkpoint gives a consistent (index, Position)
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
// # Performance
//
// The cost of the event plane is per stream message, not per event: a
// CPU profile of `kvrouter-study bench events --cpuprofile` (the embedded server
// runs in-process, so one profile covers publisher, server, subscriber and
// index) puts roughly 30µs of CPU on each message (JetStream store, dedup,
// acknowledgement, delivery, pull flow control) against 1-2µs per
// event for encode, decode, ordering and hand-off. Hence the batching
// defaults above: at 100k events/s from 16 workers, sending whenever the
// intake queue is momentarily empty made ~1.8 events per message (1ms
// linger: ~8) and cost 2.3x the CPU, queueing for tens of ms under load. A
// lingering publisher does not wake per event (only at Linger, at MaxBatch
// queued events, or for a Flush). Payloads are msgpack by default
// (encoding about 5x and decoding 1.5-5x cheaper than JSON, see
// BenchmarkEnvelope). Past that, the index's writers dominate ingestion of
// large events.
//
// Sub-packages: zmqsub (vLLM/SGLang ZMQ ingestion with replay), loadsync
// (router replica load sharing). Discovery and snapshots live in
// internal/discovery and internal/snapshot.
//
// Conn, Publisher and Subscriber are safe for concurrent use; constructors
// start no goroutines, Run(ctx) does. Order is not safe for concurrent use.
package eventplane
