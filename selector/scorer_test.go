package selector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// The cost functions as they were before scoring precomputed what is the
// same for every candidate (scorer), kept as the reference of
// TestScorerMatchesReference: the scores must stay equal to the bit.

// refCostInto is Cost writing into out (every field but Out and Prob).
func refCostInto(cfg *Config, isl, b, floorTokens int, util float64, c *Candidate, out *Breakdown) {
	B := float64(b)
	reqBlocks := max(1, float64(isl)/B)
	decay := 1.0
	if cfg.CreditDecay > 0 {
		excess := c.ActivePrefillTokens
		if !cfg.DecayAbsolute {
			excess -= floorTokens
		}
		excess = max(0, excess)
		decay = 1 / (1 + cfg.CreditDecay*(float64(excess)/B)/reqBlocks)
	}
	w := [kvevents.NumTiers]float64{cfg.OverlapCredit * decay, cfg.HostWeight, cfg.DiskWeight, cfg.SharedWeight}
	credit := refTierCredit(&c.Overlap, w)
	out.Worker = c.Worker
	out.Overlap = c.Overlap
	out.Decay = decay
	out.Credit = credit
	out.Prob = 0
	if cfg.Cost == CostTime {
		tm := cfg.Timing
		if c.Timing != nil {
			tm = *c.Timing
		}
		tm = tm.orDefault()
		refCostTimeInto(cfg, &tm, isl, b, credit, onboardTime(cfg, c, &w, b), util, c, out)
		return
	}
	out.Queue, out.Passes, out.Usage, out.Imposed, out.Onboard = 0, 0, 0, 0, 0
	prefill := float64(c.ActivePrefillTokens+isl)/B - credit
	if w := cfg.TransferWeight; w > 0 {
		// The uncached prompt arrives by transfer (DESIGN.md §10).
		prefill = float64(c.ActivePrefillTokens)/B + w*max(0, float64(isl)/B-credit)
	}
	if !cfg.Unclamped {
		prefill = max(0, prefill)
	}
	decode := float64(c.ActiveDecodeBlocks + c.NewBlocks)
	reqs := cfg.ActiveRequestWeight * float64(c.ActiveRequests)
	out.Prefill = prefill
	out.Decode = decode
	out.Requests = reqs
	out.Cost = cfg.PrefillLoadScale*prefill + decode + reqs
}

// refCostTimeInto computes the time cost (CostTime) of candidate c for a
// request of isl tokens with block size b, given its credit in blocks (the
// decay already applied) and the fleet utilization util.
//
//	own      = max(1, isl - credit*B)        uncached prompt tokens
//	chunk    = max_batched_tokens - decoding requests (a decode takes one token of a pass)
//	ahead    = PrefillSpan(active_prefill_tokens)  the queued prefill, in its own passes
//	load     = onboarding time of its lower-tier blocks (onboard.go; 0 without a model)
//	mine     = PrefillSpan(own)              its own prefill, after max(ahead, load)
//	usage    = KV usage + new_blocks / total_kv_blocks
//	decode   = (passes of ahead + mine) * DecodeTime(usage)   if the worker has active requests
//	imposed  = ImposedWeight * mine / (1-U)  what its prefill work costs the fleet (queueFactor)
//	cost     = PrefillLoadScale*(max(ahead, load) + mine + imposed) + decode + ActiveRequestWeight*active_requests
//
// The queued prefill is mostly in the pass running now, which the
// request cannot join: it waits for those passes to end, then its own
// start (pessimistic for requests still waiting to be scheduled, which an
// engine may batch with it; exact for the pass in flight, the common case).
// With Unclamped, a credit beyond the prompt (own < 1) shortens the queue
// ahead instead.
func refCostTimeInto(cfg *Config, tm *Timing, isl, b int, credit, load, util float64, c *Candidate, out *Breakdown) {
	own := float64(isl) - credit*float64(b)
	if w := cfg.TransferWeight; w > 0 {
		// The uncached prompt arrives by transfer (DESIGN.md §10).
		own = w * max(0, own)
	}
	ahead := float64(c.ActivePrefillTokens)
	if own < 1 {
		if cfg.Unclamped {
			ahead = max(0, ahead+own-1)
		}
		own = 1
	}
	chunk := c.MaxNumBatchedTokens
	if chunk <= 0 {
		chunk = tm.MaxBatchedTokens
	}
	decoding := max(0, c.ActiveRequests-c.PrefillRequests)
	chunk = max(1, chunk-decoding)
	prefill, passes := 0.0, 0
	if ahead > 0 {
		prefill, passes = refPrefillSpan(tm, ahead, chunk)
	}
	// A load overlaps the queue ahead; its excess delays the request (the
	// engine runs other requests meanwhile: no passes are added).
	prefill = max(prefill, load)
	mine, n := refPrefillSpan(tm, own, chunk)
	prefill += mine
	passes += n
	imposed := mine * cfg.ImposedWeight * queueFactor(util)
	usage := max(c.KVUsage, 0)
	if c.TotalKVBlocks > 0 {
		usage += float64(c.NewBlocks) / float64(c.TotalKVBlocks)
	}
	usage = min(usage, 1)
	decode := 0.0
	if c.ActiveRequests > 0 {
		decode = float64(passes) * tm.DecodeTime(usage)
	}
	reqs := cfg.ActiveRequestWeight * float64(c.ActiveRequests)
	out.Prefill = prefill
	out.Decode = decode
	out.Requests = reqs
	out.Queue = ahead + own
	out.Passes = passes
	out.Usage = usage
	out.Imposed = imposed
	out.Onboard = load
	out.Cost = cfg.PrefillLoadScale*(prefill+imposed) + decode + reqs
}

// refTierCredit credits every leading block once, at the best weight among
// the tiers (device, host, disk) holding it: block i is held by tier t when
// i < overlap[t]. With the default weights (1 >= 0.75 >= 0.25) this is
// device + 0.75*(host beyond device) + 0.25*(disk beyond both).
func refTierCredit(ov *[kvevents.NumTiers]int, w [kvevents.NumTiers]float64) float64 {
	credit, prev := 0.0, 0
	for {
		// Next breakpoint above prev.
		next := math.MaxInt
		for t := range kvevents.NumTiers {
			if ov[t] > prev {
				next = min(next, ov[t])
			}
		}
		if next == math.MaxInt {
			return credit
		}
		best := 0.0
		for t := range kvevents.NumTiers {
			if ov[t] >= next {
				best = max(best, w[t])
			}
		}
		credit += best * float64(next-prev)
		prev = next
	}
}

// refPrefillSpan is Timing.PrefillSpan as it was.
func refPrefillSpan(t *Timing, q float64, chunk int) (ms float64, passes int) {
	c := float64(max(chunk, 1))
	q = max(q, 1)
	full := math.Floor(q / c)
	rem := q - full*c
	ms = full * t.PrefillTime(c)
	passes = int(full)
	if rem > 0 {
		ms += t.PrefillTime(rem)
		passes++
	}
	return ms, passes
}

// TestScorerMatchesReference scores random fleets under random
// configurations (both cost models, decay, transfer, onboarding, clamping,
// fitted timing models shared by some candidates, overrides) through
// Select and Cost, and requires every candidate's breakdown to equal the
// reference's to the bit (printed with %v, which round-trips float64 and
// tells -0 from 0).
func TestScorerMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pick := func(xs ...float64) float64 { return xs[rng.IntN(len(xs))] }
	fitted := []*Timing{
		{PrefillQuad: 3e-7, PrefillLin: 0.02, PrefillConst: 12, DecodeQuad: -20, DecodeLin: 50, DecodeConst: 6},
		{PrefillQuad: 5e-7, PrefillLin: 0.01, PrefillConst: 20, DecodeConst: 4, MaxBatchedTokens: 2048},
		{}, // all zero: the defaults
	}
	for iter := range 3000 {
		cfg := DefaultConfig()
		if rng.IntN(4) == 0 {
			cfg.Cost = CostBlocks
		}
		cfg.CreditDecay = pick(0, 0, 0.5, 2)
		cfg.DecayAbsolute = rng.IntN(2) == 0
		cfg.Unclamped = rng.IntN(3) == 0
		cfg.TransferWeight = pick(0, 0, 0.3, 1)
		cfg.ImposedWeight = pick(0, 1, 2)
		cfg.ActiveRequestWeight = pick(0, 0, 1.5)
		cfg.SharedWeight = pick(0, 0.5)
		if rng.IntN(2) == 0 {
			cfg.Onboard = DefaultOnboard()
		}
		if rng.IntN(3) == 0 {
			cfg.Timing = *fitted[0]
		}
		isl, bs := 1+rng.IntN(40000), pick(16, 64)
		req := &Request{ISL: isl, BlockSize: int(bs), Utilization: pick(0, 0.3, 0.99)}
		if rng.IntN(4) == 0 {
			req.Overrides.OverlapCredit = Float(0.5)
		}
		cands := make([]Candidate, 1+rng.IntN(20))
		for i := range cands {
			c := &cands[i]
			c.Worker = kvevents.Worker{ID: uint64(i + 1)}
			blocks := isl / int(bs)
			for t := range c.Overlap {
				if rng.IntN(3) > 0 || t == 0 {
					c.Overlap[t] = rng.IntN(blocks + 2)
				}
			}
			c.ActivePrefillTokens = rng.IntN(3) * rng.IntN(20000)
			c.ActiveRequests = rng.IntN(6)
			c.PrefillRequests = rng.IntN(c.ActiveRequests + 1)
			c.ActiveDecodeBlocks = rng.IntN(5000)
			c.NewBlocks = rng.IntN(600)
			c.MaxNumBatchedTokens = []int{0, 8192, 2048, 1}[rng.IntN(4)]
			c.KVUsage = pick(-1, 0, 0.4, 0.97)
			c.TotalKVBlocks = []int{0, 16384}[rng.IntN(2)]
			c.LinkBacklog[kvevents.TierHostPinned] = pick(0, 3)
			if rng.IntN(2) == 0 {
				// Runs of candidates share a model, as a worker's ranks do.
				c.Timing = fitted[(i/3)%len(fitted)]
			}
		}
		res, err := New(cfg).Select(req, cands, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		eff := cfg.effective(req.Overrides)
		for i := range cands {
			var want Breakdown
			refCostInto(&eff, isl, int(bs), res.FloorTokens, req.Utilization, &cands[i], &want)
			got := res.Breakdowns[i]
			got.Out, got.Prob = 0, 0
			if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
				t.Fatalf("iter %d cand %d: Select scored\n%s\nwant\n%s", iter, i, g, w)
			}
			if g, w := fmt.Sprintf("%+v", Cost(eff, isl, int(bs), res.FloorTokens, req.Utilization, &cands[i])), fmt.Sprintf("%+v", want); g != w {
				t.Fatalf("iter %d cand %d: Cost\n%s\nwant\n%s", iter, i, g, w)
			}
		}
	}
}
