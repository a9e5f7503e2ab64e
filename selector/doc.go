// Package selector scores candidate workers for one request with the cost
// function of DESIGN.md §4 and picks one.
//
// Pipeline: filters (a []Filter built in one function, Filters) mark
// ineligible candidates with a Reason; every remaining candidate gets a Cost
// with its full Breakdown; the lowest cost wins, ties going to the least
// utilized rank (Config.TieUtilization, Candidate.Utilization) and then
// uniformly at random from the injected *rand.Rand (never by worker id or
// map order; Dynamo's preset skips the utilization step), or,
// with temperature T > 0, a candidate is sampled with
//
//	p_i ∝ exp(-(c_i - c_min) / ((c_max - c_min) * T))
//
// # Cost: time to first token (default, CostTime)
//
// The cost of a candidate estimates what the request will wait for its
// first token there, in milliseconds, from the worker's timing model
// (Timing: DESIGN.md §6's prefill and decode polynomials for the mocker;
// for real engines a per-worker model fitted online by TimingFit, with
// the polynomials as its prior):
//
//	credit   = tier-weighted overlap blocks (below; decay applies)
//	own      = max(1, isl - credit*B)             uncached prompt tokens
//	chunk    = max_batched_tokens - decoding requests
//	ahead    = PrefillSpan(active_prefill_tokens) prefill queued before it (FCFS), own passes
//	mine     = PrefillSpan(own)                   its own prefill, in the passes after
//	usage    = kv_usage + new_blocks / total_kv_blocks
//	decode   = passes * DecodeTime(usage)         if the worker has active requests
//	imposed  = ImposedWeight * mine / (1 - U)     what its work costs the fleet
//	cost     = PrefillLoadScale*(ahead + mine + imposed) + decode + ActiveRequestWeight*active_requests
//
// where PrefillSpan(T) is the time of the chunked passes computing T
// tokens, and U the fleet's prefill utilization (Request.Utilization; the
// router estimates it). ahead + mine + decode is the request's time to
// first token; imposed prices the work it adds: in an M/M/1 queue a unit
// of work costs the system 1/(1-U) of response time, so recomputing a
// prefix another worker holds costs more as the fleet fills, and a cache
// hit is worth more than the time it saves this request alone.
//
// NB: every term is one unit, so no weight is tuned to a trace. Dynamo's
// unit weights let one more active 12k-token request (~190 decode
// blocks) outweigh a 190-block hit that saves ~250 ms of prefill; in the
// simulator the time cost keeps conversations where they are cached and
// still spreads backlog. ImposedWeight 1 beat 1.5, 2 and 3 (internal/sim).
//
// # The pass model (Config.PassModel, default on)
//
// The engine (the mocker's vLLM v1 scheduler, DESIGN.md §6) runs one pass
// at a time and, at each pass start, takes the pending prefill first come
// first served up to its token budget: a request waits out the pass in
// flight, which it cannot join, then shares passes with the prefill
// pending behind it. With the pass model ahead + mine is instead
//
//	inflight = time left of the pass in flight (pass.go)
//	waiting  = prefill tokens pending behind it
//	prefill  = max(inflight, load) + PrefillSpan(waiting + own)
//
// decode counting the passes of that span. The router dates the pass in
// flight from what it sees (loads.Pass): a request routed to an idle rank
// starts one, a first token ends one and the next starts with every token
// then pending; the timing model rolls the passes forward from there, the
// tokens routed since taken by the next rolled pass, or, when
// Candidate.PassQueue dates each (the router's feature pass-arrivals), by
// the first pass begun after they came. A model that runs past every
// pending token with no first token come assumes the engine cycles
// through them again. At its sequence cap (Candidate.MaxNumSeqs) an
// engine admits no one until a request ends, a wait no pass dates: such
// a candidate keeps the pass-agnostic queue, after Candidate.SlotWait
// (the router's estimate: the requests over the cap, plus this one,
// times the mean gap between the rank's completions).
//
// NB: dating the pass in flight better (decode phase, overdue passes,
// arrival moments) and charging the first tokens a request delays cut
// the model's TTFT underestimates but lost verdicts, load balancing
// gaining as much as kv (docs/experiments/cost-terms.md).
//
// # The tail guard (Request.TailTTFT > 0; the router's feature tail-guard)
//
// With a tail (the router's running TailQuantile of each request's
// fastest predicted time to first token, TailTracker), predicted time
// above it is charged on top of the default cost, after it (tail.go):
//
//	imposed += TailWeight * min(1, PrefillSpan(isl)/τ)² * max(0, prefill + decode - τ)
//
// so a cache hit does not buy a long prompt a wait among the fleet's
// slowest, while hits that shorten a queue keep paying.
//
// NB: with pass-arrivals it passed 11 of 12 whole-trace verdicts (the
// default 8) but 10 of 12 on the first 4000 requests (the default 12):
// off by default (docs/experiments/cost-terms.md).
//
// # Cost: Dynamo's formula (CostBlocks, Preset "dynamo")
//
// In blocks of B tokens, exactly as Dynamo's KV router (DESIGN.md §4):
//
//	prefill  = max(0, (active_prefill_tokens + isl)/B - credit)
//	decode   = active_decode_blocks + new_blocks
//	cost     = PrefillLoadScale*prefill + decode + ActiveRequestWeight*active_requests
//
// # Credit (both models)
//
//	decay    = 1 / (1 + CreditDecay * excess_prefill_blocks / request_blocks)
//	credit   = Σ over leading blocks of the best weight of the tiers holding it
//	         = OverlapCredit*decay*device + HostWeight*host' + DiskWeight*disk'
//
// (the second line with the default, decreasing weights) where host' and
// disk' count only the blocks a slower tier adds beyond the faster tiers'
// prefix: a block is credited once, at its best tier, and
// excess_prefill_blocks is the candidate's active prefill tokens above the
// "load floor" (the least active prefill tokens among the eligible
// candidates), divided by B. Unclamped lets the credit offset more than
// the request's own prompt (CostBlocks: the prefill term goes negative;
// CostTime: own goes negative and eats into the queue). See Config for
// every knob.
//
// NB: the lower-tier weights price the prefill a hit saves, not the G1
// room it takes: an engine admits a request with a lower-tier prefix only
// once G1 has room for the whole staged prefix, so when G1 is small next
// to the prompts tier-aware credits lose TTFT p99 to "0 0"; with room in
// G1 they win (README, KV tiers).
//
// With an onboarding model (Config.Onboard, off by default; CostTime
// only) the credited lower-tier blocks also cost their load time over
// each tier's link, and the request's own prefill starts after the larger
// of the queue ahead and that load (onboard.go).
//
// # Filters and errors
//
// Filters drop a candidate for a hard constraint (Constraints: allowed
// workers, a pinned worker+rank, a rank range, labels) or for being over
// a busy threshold (Config.BusyKVUsage, BusyPrefillTokens,
// BusyPrefillFraction). No candidate left yields ErrNoneEligible or, when
// some candidate passed every hard constraint and was only dropped by a
// busy threshold, ErrAllOverloaded (the shells answer 503 and 529). A
// LoRA adapter is no filter: the cost charges each worker its load there
// (none where loaded; Config.LoRALoad on a free slot, plus LoRAEvict when
// full, plus a load off the adapter's rendezvous home when no one has it
// loaded; lora.go), and the queue decides.
//
// The package is pure: randomness enters as a *rand.Rand (math/rand/v2), no
// clock, no I/O. A Selector is immutable after New and safe for concurrent
// use provided each caller passes its own rng (or serializes rng use).
package selector
