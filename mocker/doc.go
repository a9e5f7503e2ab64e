// Package mocker is a GPU-free inference engine that behaves like vLLM (v1
// scheduler, prefix caching, KV events) from the outside, for tests,
// discrete-event fleet simulation, and the HTTP mocker worker
// (internal/mockerd). DESIGN.md §6.
//
// The core does no I/O, reads no clock, starts no goroutines and uses no
// randomness: it is driven by explicit inputs (the etcd raft style).
// Requests enter with Add, leave early with Cancel, and Step(now) runs one
// forward pass that starts at simulated time now. Step returns the pass's
// modeled duration, the KV events it emitted, the tokens it generated and the
// requests it finished. A shell (real time, HTTP) sleeps Result.Sleep between
// passes; a discrete-event simulator schedules the next Step at Result.End().
//
// # Block pool
//
// NumBlocks physical blocks of BlockSize tokens. A block is free (no
// content), active (referenced by one or more running requests; refcount >
// 0) or inactive (refcount 0 but still cached, kept in an LRU). Cached blocks
// are full blocks keyed by their engine sequence hash: local hash
// kvhash.Local of the block's tokens, chained with kvhash.SeqNext from the
// first block (so the router's sequence hash of a prompt equals the engine's
// hash). Allocation takes free blocks first and only then evicts the LRU's
// oldest inactive block, emitting a Removed event. Requests release their
// blocks in reverse order (vLLM does the same), so the tail of a prompt is
// evicted before its prefix. Invariant: every physical block is in exactly
// one of the three states, and a hash names at most one block.
//
// # KV events
//
// Each pass emits, in the order things happened: Removed events (consecutive
// evictions merge into one event) and one Stored event per run of newly
// cached consecutive blocks of a request, whose parent is the block just
// before the run (HasParent false for a run starting at block 0) and whose
// StartPosition is the run's first block index. Event ids start at 0 and grow
// by one per event; WorkerID and DPRank come from Config.Worker. With prefix
// caching off no block is ever cached and no event is emitted.
//
// # Scheduler (vLLM v1)
//
// Each pass has a token budget of MaxNumBatchedTokens. Running requests are
// scheduled first, in admission order: a decoding request takes one token, a
// request still prefilling takes min(remaining, budget) tokens (chunked
// prefill). When the blocks for a running request cannot be allocated, the
// most recently admitted running request is preempted (LIFO): it frees all
// its blocks, loses its computed tokens and goes back to the front of the
// waiting queue, to be recomputed (prompt plus tokens generated so far) later.
// Waiting requests are admitted in order, only in a pass without preemption,
// while fewer than MaxNumSeqs are running, budget remains, and the pool can
// supply the blocks for the request's first chunk while keeping Watermark *
// NumBlocks blocks spare. An admitted request first reuses the longest cached
// prefix (active or inactive blocks), capped so that at least one prompt token
// is computed (as vLLM does). Full blocks are cached as soon as they are
// scheduled, so a request admitted later in the same pass can hit them.
//
// Generated tokens are dummies: the token at position i of request id is
// OutputToken(id, i), a deterministic mix of both. Blocks filled by generated
// tokens are cached like prompt blocks (vLLM does so too), with the same hash
// rules.
//
// # Timing
//
// A pass with T > 0 prefill tokens costs 4.21e-7*T² + 0.01518*T + 16.5 ms;
// a pass with at least one decoding request costs -25.74*p² + 54.01*p + 5.74
// ms, p the fraction of blocks active during the pass; a mixed pass costs the
// sum of both (Dynamo's mocker also adds the prefill and decode costs of one
// iteration). See PassTime and Config.SpeedupRatio.
//
// An Engine is not safe for concurrent use; shells serialize calls.
package mocker
