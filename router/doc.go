// Package router is kvrouter's library API: it composes the event-fed
// prefix indexes (one indexer.Index per storage tier), the approximate side
// index, the load tracker (loads), the selector (cost, filters, softmax),
// the wait queue (queue) and session affinity (affinity) into
// Route(request) -> Decision. See DESIGN.md §3 and §4.
//
// # Use
//
//	cfg := router.DefaultConfig()             // then set fields; cfg.Validate()
//	r, err := router.New(cfg, router.Options{
//		Rand: rand.New(rand.NewPCG(seed1, seed2)), // required; NewIndex/Approx default to indexer.NewFlash/NewApprox
//	})
//	r.AddWorker(router.WorkerInfo{ID: 1, MaxNumBatchedTokens: 8192, TotalKVBlocks: 16384, BlockSize: 64})
//	r.ApplyEvent(ev)                          // KV events, any goroutine (per-worker order)
//	d, err := r.Route(ctx, req, now)          // pick a worker; d.Queued: wait for Release
//	r.PrefillDone(req.ID, now)                // first output token
//	r.Free(req.ID, now)                       // finished, error or cancel (Fail: dispatch failed)
//	r.Settle()                                // Options.Deferred or FreeLater: off the request path
//	r.Sweep(now)                              // periodically: stale requests, idle sessions
//	r.SetWorkerTiming(1, fit.Timing())        // a worker's fitted timing model (selector.TimingFit)
//	for _, rel := range r.Release(now) { ... } // after capacity frees, when the queue is on
//
// # Policies
//
// Policy is kvrouter's one routing vocabulary (ParsePolicy: kv, approx,
// load, round-robin, random). PolicyKV (default) reads overlap from the
// event-fed indexes (per tier; ApplyEvent feeds them, or the shell
// applies through its own wrapper on Index(t)), merged per worker (the
// larger overlap wins) with two predictions: the prefix each worker's
// active requests hold (Config.Predict.Active; resident until they end,
// however late their events) and the recent decisions' blocks
// (Config.Predict.TTL). So kv knows what approx's routing history knows of
// running requests, and the evictions besides (crediting what a worker
// recently held and evicted since was measured not to help:
// docs/experiments/cost-terms.md). PolicyApprox has no
// events: on every decision the router inserts the request's blocks for
// the chosen worker into the approximate side index (TTL, DESIGN.md §3)
// and reads device overlap from it. PolicyLoad never looks at caches.
// With Config.TierChains, lower-tier events must go through ApplyEvent: a worker's KV is one
// prefix chain across tiers, and the router derives the host, disk and
// external indexes from a per-worker view of which tiers hold each block
// (tierview.go, DESIGN.md §7); applying them to Index(t) directly rejects
// a store whose parent is in a faster tier.
// Every event-fed index is wrapped in indexer.Groups (Config.Index.Groups):
// a hybrid model's worker, one that publishes sliding-window or state KV
// cache groups, is credited its joint match (DESIGN.md §13; GroupMatches
// explains it); other workers exactly as before.
// PolicyRoundRobin and PolicyRandom (the baselines of DESIGN.md §8) pass
// the same filters but pick blind to cost: the next eligible worker+rank,
// or one drawn from Options.Rand. Every policy tracks load.
//
// NB: in the simulator (whole conversation trace, 8 workers, 50% load)
// kv with Predict.TTL at approx's 2 minutes decides exactly as approx
// does; what the events add is the evictions they report, and kv's p50
// differs from approx's by -0.27 to +0.40 ms at rates 0.1% to 0.3% apart,
// its p99 lower by 37 to 95 ms (docs/experiments/router-events-vs-approx.md).
//
// # Disaggregated prefill and decode
//
// Workers carry a Role (WorkerInfo.Role: both, prefill, decode) and a
// request a Hop (Request.Hop): only workers whose role serves the hop are
// candidates; indexes and loads stay per worker. Disaggregate decides per
// request whether to take the prefill hop (Config.Disagg.Policy); the
// decode hop prices the blocks its worker lacks as a KV transfer
// (Config.Disagg.TransferWeight) and books no prefill for them. See
// disagg.go and DESIGN.md §10.
//
// # Time and randomness
//
// Nothing here reads a clock: every call that depends on time takes now,
// so a discrete-event simulator drives the router on simulated time by
// passing its own clock's value, and a shell passes time.Now(). The only
// randomness is Options.Rand (ties at temperature 0 that rank utilization
// leaves, softmax sampling, PolicyRandom): seeded, a simulation is
// reproducible. Ties go first to the rank with the lowest running prefill
// utilization (selector Config.TieUtilization), so two routers that know
// the same decide the same whatever their streams.
//
// # Block size
//
// Config.BlockSize must equal every engine's block size: AddWorker rejects
// a worker with another (ErrBlockSize), since a mismatch would silently
// yield zero overlap.
//
// # Errors
//
// Route returns selector.ErrNoneEligible when no worker passes the
// request's constraints, selector.ErrAllOverloaded when all that do are
// over a busy threshold or the queue is full, ErrBadRequest for malformed
// requests. Statuses are the shells' business (the HTTP frontend answers
// 503, 529 and 400).
//
// # Concurrency
//
// A Router is safe for concurrent use by many goroutines (the HTTP
// frontend calls Route from every request goroutine). One mutex guards
// the load tracker, rng, queue, affinity table, approximate index and
// worker set; the decision itself (candidates, cost, pick) runs under it,
// which is what makes concurrent decisions see each other's load. Prefix
// index lookups in Route run before the lock, concurrently with each
// other and with ApplyEvent (indexes are safe for concurrent use); only
// Release looks up under the lock. ApplyEvent takes the lock only to
// count. Events callbacks run after the lock is released.
//
// Deferred bookkeeping (settle.go): with Options.Deferred, Route returns
// once it has decided, its booking (the load tracker's Add, the predicted
// index's insert) appended to a backlog; FreeLater queues an end likewise.
// Settle applies the backlog in order, and so does every call that reads
// load or predictions (Route first of all) before it reads: decisions are
// the same as with immediate booking (TestDeferredSameDecisions). A shell calls Settle
// from a goroutine woken after each route and end, off the request path;
// a route that comes first settles the backlog itself
// (SettleStats.RouteSettled). Calls that touch neither (SetWorkerTiming,
// UpdateWorkerMetrics, ...) do not settle. FreeLater drops an unknown id
// silently, and its BookFree booking is reported by the next Settle.
//
// # Allocations
//
// Steady-state Route and Free do not allocate per call: a request's
// hashes and overlap lists live in pooled scratch (sync.Pool), candidates
// and filter reasons in buffers under the mutex, loads in dense slots
// (loads.Tracker.Slot). The one per-decision memory is
// Decision.Candidates, which the caller owns: it is cut (with its capacity
// capped) from a slab of about 64 KB shared by a few consecutive
// decisions, so a retained Decision keeps its slab alive; a caller that
// passes its own buffer (Request.Candidates) routes without allocating.
package router
