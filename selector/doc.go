// Package selector scores candidate workers for one request with the cost
// function of DESIGN.md §4 and picks one.
//
// Pipeline: filters (a []Filter built in one function, Filters) mark
// ineligible candidates with a Reason; every remaining candidate gets a Cost
// with its full Breakdown; the lowest cost wins, ties broken uniformly at
// random from the injected *rand.Rand (never by worker id or map order), or,
// with temperature T > 0, a candidate is sampled with
//
//	p_i ∝ exp(-(c_i - c_min) / ((c_max - c_min) * T))
//
// Cost, in blocks of B tokens:
//
//	decay    = 1 / (1 + CreditDecay * excess_prefill_blocks / request_blocks)
//	credit   = Σ over leading blocks of the best weight of the tiers holding it
//	         = OverlapCredit*decay*device + HostWeight*host' + DiskWeight*disk'
//	prefill  = max(0, (active_prefill_tokens + isl)/B - credit)
//	decode   = active_decode_blocks + new_blocks
//	cost     = PrefillLoadScale*prefill + decode + ActiveRequestWeight*active_requests
//
// (the second line with the default, decreasing weights) where host' and
// disk' count only the blocks a slower tier adds beyond the faster tiers'
// prefix: a block is credited once, at its best tier, and
// excess_prefill_blocks is the candidate's active prefill tokens above the
// "load floor" (the least active prefill tokens among the eligible
// candidates), divided by B. See Config for every knob.
//
// No candidate left after filtering yields ErrNoneEligible (HTTP 503) or,
// when some candidate passed every hard constraint and was only dropped by a
// busy threshold, ErrAllOverloaded (HTTP 529); HTTPStatus maps them.
//
// The package is pure: randomness enters as a *rand.Rand (math/rand/v2), no
// clock, no I/O. A Selector is immutable after New and safe for concurrent
// use provided each caller passes its own rng (or serializes rng use).
package selector
