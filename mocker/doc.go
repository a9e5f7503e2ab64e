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
// # Tiers (DESIGN.md §7)
//
// Config.Tiers adds lower tiers below the device pool (G1): G2 pinned host
// memory and G3 local disk per engine (DefaultTiers: 4x and 16x NumBlocks),
// and G4, a SharedStore one fleet shares. Each holds whole blocks, evicts
// its least recently used unpinned block when full, and is reached over a
// Link: a batch of n blocks occupies it for Latency + n*BlockBytes/Bandwidth
// (defaults from public PCIe Gen4 x16, NVMe Gen4 and 100 Gb/s figures;
// block bytes from a Llama-3-8B-like fp16 KV of 128 KiB per token).
// Everything runs on simulated time: the pipeline advances at each Step's
// start (or Advance) to that time.
//
// Offload pipeline: a block enters it when G1 evicts it (write-back, the
// default) or when it is computed (TierConfig.WriteThrough); the policy
// screen keeps blocks reused at least MinReuse times; the item is queued
// until its producing pass ends, joins the open batch, which is flushed at
// FlushBlocks (8) blocks, in batches of at most MaxBatch (64), or
// FlushAfter (10ms) after its first block; the flushed batch occupies the
// link (after the batches before it) and commits when the transfer ends.
// Until it is in flight an item is cancellable, moving no bytes: its
// write-through request died (cancelled or preempted), its evicted block
// is held by a faster tier again (re-used), or the target holds it already.
// A commit that evicts cascades the victims into the next tier: G1 → G2 →
// G3 → G4 (skipping absent tiers). Each commit emits Stored and each
// eviction Removed with the tier (kvevents.Event.Tier); a stored block's
// parent may live in a faster tier, since the prefix chain is one chain
// across tiers. G4's events carry the SharedStore's own identity and ids.
//
// Onboarding: see onboard.go. Admission takes the G1 prefix hit, then
// continues the prefix through the lower tiers (the fastest holding each
// block); those blocks are pinned, staged into fresh G1 blocks over the
// tiers' up links, and the request waits (holding its slot, not
// scheduled) while other requests run. When they land they are cached in
// G1 and only the rest of the prompt is computed. Result.TierCachedTokens
// splits the cached prefix by the tier it was found in.
//
// # Disaggregation (DESIGN.md §10)
//
// See disagg.go: a Request.Hold (prefill hop) keeps its blocks after it
// finishes until Release or Config.HoldTimeout; a Request.RemoteBlocks
// (decode hop) pulls those blocks over Config.KVTransfer like an
// onboarding, caches them (Stored) and reports the landing in
// StepResult.Pulled.
//
// # Hybrid models (DESIGN.md §13)
//
// Config.Hybrid adds a second KV cache group (index 1; hybrid.go) with a
// pool of its own (GroupFraction of NumBlocks: 0.5 swa, 0.25 mamba) and
// its own LRU; the hashes are the full group's. swa (sliding window W,
// default 128 as gpt-oss): a request holds a group block per position,
// and each pass first releases to the LRU the blocks that left its window
// (below (computed-W+1)/B, as vLLM), while its full-attention blocks stay
// until it ends. mamba (Nemotron-H-like): a running request holds one
// uncached state block; the state is checkpointed every StateInterval
// blocks (default 8) and at the prompt's last full block, each checkpoint
// cached and released at once; a hit copies it. Admission reuses the
// joint hit: the largest L <= the full-attention hit whose window blocks
// [L-ceil((W-1)/B), L) or checkpoint L-1 the group holds; CachedTokens
// reports it. Group events carry kvevents.Group and follow the pass's
// full-attention events. No tiers, holds or remote blocks.
//
// An Engine is not safe for concurrent use; shells serialize calls.
package mocker
