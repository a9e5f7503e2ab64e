package selector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Sentinel errors of Select; test with errors.Is. Shells map them to
// their protocol's statuses (the HTTP frontend: 503 and 529).
var (
	// ErrNoneEligible: no candidate passes the request's hard constraints
	// (or there are no workers at all).
	ErrNoneEligible = errors.New("selector: no eligible worker")
	// ErrAllOverloaded: some candidates pass the hard constraints but every
	// one of them is over a busy threshold (or the wait queue is full).
	ErrAllOverloaded = errors.New("selector: all eligible workers overloaded")
)

// Candidate is one worker+rank as the selector sees it.
type Candidate struct {
	Worker kvevents.Worker
	// Labels of the worker (shared by its ranks), matched by
	// Constraints.Labels.
	Labels map[string]string
	// MaxNumBatchedTokens is the engine's token budget per step; 0 unknown.
	MaxNumBatchedTokens int
	// MaxNumSeqs is the engine's cap on running requests; 0 unknown. At
	// the cap a request waits for one to end (SlotWait), which no pass
	// dates (CostTime then keeps the pass-agnostic queue).
	MaxNumSeqs int
	// SlotWait is how long, in ms, the request would wait for a sequence
	// slot on the rank (at its MaxNumSeqs: the requests over the cap, plus
	// this one, times the mean gap between the rank's completions; the
	// router's estimate). CostTime's pass model adds it to the wait. 0:
	// below the cap or unknown.
	SlotWait float64
	// KVUsage is the rank's KV cache usage fraction in [0, 1]; negative
	// means unknown (never busy by that rule).
	KVUsage float64
	// Overlap is the number of leading request blocks held per storage
	// tier (indexed by kvevents.Tier).
	Overlap [kvevents.NumTiers]int
	// ActivePrefillTokens, ActiveDecodeBlocks and ActiveRequests are the
	// rank's current load (package loads).
	ActivePrefillTokens int
	ActiveDecodeBlocks  int
	ActiveRequests      int
	// PrefillRequests is how many of ActiveRequests are still in prefill
	// (the others decode: each takes one token of every pass; CostTime).
	PrefillRequests int
	// TotalKVBlocks is the rank's KV capacity in blocks (CostTime turns
	// NewBlocks into KV usage with it); 0 unknown.
	TotalKVBlocks int
	// Timing is this worker's fitted timing model (TimingFit); nil uses
	// Config.Timing.
	Timing *Timing
	// NewBlocks is the number of decode blocks this request would add here
	// (its prompt blocks not yet active on the rank, plus any output blocks).
	NewBlocks int
	// Utilization is this rank's own prefill utilization, the fraction of
	// time it has prefill work in flight (the router's running estimate,
	// like Request.Utilization for the fleet); Config.TieUtilization breaks
	// cost ties with it. 0: unknown or idle.
	Utilization float64
	// LinkBacklog is, per lower tier, how long the onboarding loads already
	// booked on the rank's link still take, in ms (Config.Onboard; 0 none).
	LinkBacklog [kvevents.NumTiers]float64
	// PassKnown says PassElapsed and PassTokens describe the rank's
	// forward pass in flight as the router models it (loads.Pass): it
	// started PassElapsed ms ago with PassTokens prefill tokens pending.
	// CostTime with Config.PassModel rolls the passes forward from there
	// (pass.go). False: no model (the queue is charged as if no pass were
	// under way).
	PassKnown   bool
	PassElapsed float64
	PassTokens  int
	// PassQueue is the prefill routed to the rank since its dated pass
	// started (loads.PassArrivals), oldest first: a pass rolled forward
	// from there takes each only if it began after it came (pass.go).
	// Nil: every pending token beyond PassTokens counts as come at once
	// (the router fills it only with its feature pass-arrivals).
	PassQueue []PassArrival
	// LoRAKnown says LoRAs and MaxLoRAs are reported by the worker (its
	// /v1/models or registration); false: unknown, and the adapter term
	// treats the worker as having a free slot (lora.go).
	LoRAKnown bool
	// LoRAs are the adapters loaded on the worker (shared by its ranks).
	LoRAs []string
	// MaxLoRAs is the worker's adapter slot count (vLLM's --max-loras);
	// 0: unbounded or unknown.
	MaxLoRAs int
}

// PassArrival is prefill routed to a rank after its dated pass started:
// Tokens prompt tokens to compute, routed Ago ms before now.
type PassArrival struct {
	Ago    float64
	Tokens int
}

// RankRange bounds data-parallel ranks, inclusive.
type RankRange struct{ Min, Max uint32 }

// Constraints are a request's hard rules on where it may run.
type Constraints struct {
	// Allow lists the worker ids the request may use; empty allows all.
	Allow []uint64
	// Pin, when set, admits exactly that worker+rank.
	Pin *kvevents.Worker
	// Ranks, when set, admits only ranks within [Min, Max].
	Ranks *RankRange
	// Labels lists key=value pairs the worker must carry.
	Labels map[string]string
}

// Request is what the selector needs to know about one request.
type Request struct {
	// ISL is the prompt length in tokens.
	ISL int
	// BlockSize is B, in tokens (> 0).
	BlockSize   int
	Constraints Constraints
	Overrides   Overrides
	// Utilization is the fleet's prefill utilization U, the fraction of
	// time a worker has prefill work in flight, in [0, 1) (the router keeps
	// a running estimate). CostTime charges a request's own prefill time
	// ImposedWeight/(1-U) times again: in an M/M/1 queue a unit of work
	// costs the system 1/(1-U) of response time. 0: unknown or idle.
	Utilization float64
	// TailTTFT is the router's running estimate of the fleet's tail of
	// predicted time to first token, in ms (TailTracker), which CostTime
	// then guards (tail.go; the router's feature tail-guard). 0: unknown
	// or off, no tail charge.
	TailTTFT float64
	// LoRA is the adapter the request names ("" = base model); the cost
	// then charges each worker the adapter's load there (lora.go).
	LoRA string
}

// Reason says why a candidate was not scored; ReasonNone means it was.
type Reason uint8

const (
	ReasonNone      Reason = iota // eligible and scored
	ReasonNotAllow                // not in the allow-list
	ReasonNotPinned               // not the pinned worker+rank
	ReasonRank                    // rank outside the bounds
	ReasonLabel                   // missing a required label
	ReasonBusy                    // every rank of the worker is over a busy threshold
)

var reasonNames = [...]string{"", "not-allowed", "not-pinned", "rank-out-of-bounds", "missing-label", "busy"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", r)
}

// Overload reports whether r is a load rule (busy) rather than a hard
// constraint: a request whose candidates are all out for overload reasons
// gets ErrAllOverloaded (529), not ErrNoneEligible (503).
func (r Reason) Overload() bool { return r == ReasonBusy }

// Breakdown is one candidate's cost and its terms: in blocks under
// CostBlocks, in milliseconds under CostTime.
type Breakdown struct {
	Worker kvevents.Worker
	// Out is why the candidate was filtered out (ReasonNone: scored; the
	// cost fields are then meaningful).
	Out Reason
	// Overlap per tier, copied from the candidate.
	Overlap [kvevents.NumTiers]int
	// Decay is the factor applied to the device credit (1 = none).
	Decay float64
	// Credit is the overlap credit in blocks.
	Credit float64
	// Prefill is the adjusted prefill, before PrefillLoadScale (CostTime:
	// the modeled time of the prefill passes up to its first token).
	Prefill float64
	// Decode is active decode blocks + new blocks (CostTime: the decode
	// share of those passes).
	Decode float64
	// Queue, Passes and Usage are CostTime's intermediate figures: prefill
	// tokens up to and including the request's own, the passes they take,
	// and the KV usage with the request's new blocks.
	Queue  float64
	Passes int
	Usage  float64
	// Imposed is CostTime's ImposedWeight term (before PrefillLoadScale):
	// the request's own prefill time times ImposedWeight/(1-U), plus the
	// tail guard's charge (Request.TailTTFT, tail.go).
	Imposed float64
	// InFlight is, under Config.PassModel, the modeled time left of the
	// rank's pass in flight in ms (the request cannot join it), and
	// Waiting the prefill tokens pending behind it, which the request's
	// own share passes with (pass.go).
	InFlight float64
	Waiting  float64
	// SlotWait is Candidate.SlotWait as charged (Config.PassModel), in ms.
	SlotWait float64
	// Onboard is CostTime's load time of the credited lower-tier blocks
	// (Config.Onboard), in ms; the prefill waits for the larger of it and
	// the queue ahead.
	Onboard float64
	// Requests is the active-request term (ActiveRequestWeight * requests).
	Requests float64
	// LoRA is the adapter term of a request naming an adapter (lora.go):
	// its load, eviction and home charges on the candidate, in ms under
	// CostTime, in blocks under CostBlocks; 0 when loaded or none.
	LoRA float64
	// Cost = PrefillLoadScale*Prefill + Decode + Requests + LoRA.
	Cost float64
	// Prob is the selection probability (1/k for the k tied minima at
	// temperature 0, the softmax probability otherwise; 0 if filtered).
	Prob float64
}

// String formats b on one line, e.g.
// "w1: overlap=48/0/0 credit=48 prefill=12 decode=46 cost=58 p=1".
func (b Breakdown) String() string {
	if b.Out != ReasonNone {
		return fmt.Sprintf("w%s: overlap=%d/%d/%d out=%s", b.Worker, b.Overlap[kvevents.TierDevice], b.Overlap[kvevents.TierHostPinned], b.Overlap[kvevents.TierDisk], b.Out)
	}
	s := fmt.Sprintf("w%s: overlap=%d/%d/%d", b.Worker, b.Overlap[kvevents.TierDevice], b.Overlap[kvevents.TierHostPinned], b.Overlap[kvevents.TierDisk])
	if g := b.Overlap[kvevents.TierExternal]; g > 0 {
		s += fmt.Sprintf("/%d", g) // the fleet's G4 chain, when credited
	}
	s += " credit=" + fmtf(b.Credit)
	if b.Decay != 1 {
		s += " decay=" + fmtf(b.Decay)
	}
	if b.Passes > 0 {
		s += " queue=" + fmtf(b.Queue) + " passes=" + fmt.Sprint(b.Passes) + " usage=" + fmtf(b.Usage)
	}
	if b.InFlight != 0 || b.Waiting != 0 {
		s += " inflight=" + fmtf(b.InFlight) + " waiting=" + fmtf(b.Waiting)
	}
	if b.SlotWait != 0 {
		s += " slotwait=" + fmtf(b.SlotWait)
	}
	if b.Onboard != 0 {
		s += " onboard=" + fmtf(b.Onboard)
	}
	s += " prefill=" + fmtf(b.Prefill)
	if b.Imposed != 0 {
		s += " imposed=" + fmtf(b.Imposed)
	}
	s += " decode=" + fmtf(b.Decode)
	if b.Requests != 0 {
		s += " reqs=" + fmtf(b.Requests)
	}
	if b.LoRA != 0 {
		s += " lora=" + fmtf(b.LoRA)
	}
	return s + " cost=" + fmtf(b.Cost) + " p=" + fmtf(b.Prob)
}

func fmtf(v float64) string { return fmt.Sprintf("%.4g", v) }

// Result is the outcome of Select.
type Result struct {
	// Chosen indexes the winning candidate; -1 when Select failed.
	Chosen int
	// Breakdowns has one entry per candidate, in candidate order.
	Breakdowns []Breakdown
	// FloorTokens is the least active prefill tokens among the eligible
	// candidates (the decay's load floor).
	FloorTokens int
}

// Selector scores and picks. Build with New; immutable afterwards.
type Selector struct {
	cfg     Config
	filters []Filter
}

// New returns a Selector for cfg (which should pass Validate).
func New(cfg Config) *Selector {
	return &Selector{cfg: cfg, filters: Filters(cfg)}
}

// Config returns the selector's configuration.
func (s *Selector) Config() Config { return s.cfg }

// Filter marks the candidates it rejects: it sets out[i] to its Reason for
// every candidate i it drops and leaves out[i] alone otherwise (an earlier
// filter's reason wins). len(out) == len(cands).
type Filter func(req *Request, cands []Candidate, out []Reason)

// Filters builds the filter chain for cfg, applied in order before scoring.
// A new filter is one line here.
func Filters(cfg Config) []Filter {
	return []Filter{
		allowFilter,
		pinFilter,
		rankFilter,
		labelFilter,
		busyFilter(cfg),
	}
}

// Eligible runs the filters, writing each candidate's Reason to out (which
// must have len(cands) and be zeroed).
func (s *Selector) Eligible(req *Request, cands []Candidate, out []Reason) {
	for _, f := range s.filters {
		f(req, cands, out)
	}
}

// Select filters, scores and picks one candidate. rng must not be nil: it
// breaks ties and samples at temperature > 0. On error Result.Chosen is -1
// and Breakdowns still tells why every candidate was dropped.
func (s *Selector) Select(req *Request, cands []Candidate, rng *rand.Rand) (Result, error) {
	return s.SelectInto(req, cands, rng, make([]Breakdown, len(cands)), make([]Reason, len(cands)))
}

// SelectInto is Select writing into caller-provided memory, for callers
// that route at high rates: Result.Breakdowns is bs[:len(cands)] and
// reasons (scratch, len >= len(cands)) receives every candidate's Reason.
// bs and reasons may hold garbage; both are overwritten.
func (s *Selector) SelectInto(req *Request, cands []Candidate, rng *rand.Rand, bs []Breakdown, reasons []Reason) (Result, error) {
	res := Result{Chosen: -1, Breakdowns: bs[:len(cands)]}
	if req.BlockSize <= 0 {
		clear(res.Breakdowns)
		return res, fmt.Errorf("selector: block size %d must be > 0", req.BlockSize)
	}
	if err := req.Overrides.Validate(); err != nil {
		clear(res.Breakdowns)
		return res, err
	}
	out := reasons[:len(cands)]
	clear(out)
	s.Eligible(req, cands, out)
	cfg := &s.cfg
	if o := req.Overrides; o.OverlapCredit != nil || o.PrefillLoadScale != nil || o.Temperature != nil || o.TransferWeight != nil {
		eff := s.cfg.effective(o)
		cfg = &eff
	}

	n, overloaded := 0, false
	floor := math.MaxInt
	for i := range cands {
		if out[i] == ReasonNone {
			n++
			floor = min(floor, cands[i].ActivePrefillTokens)
		} else if out[i].Overload() {
			overloaded = true
		}
	}
	if n == 0 {
		for i := range cands {
			res.Breakdowns[i] = Breakdown{Worker: cands[i].Worker, Out: out[i], Overlap: cands[i].Overlap}
		}
		if overloaded {
			return res, fmt.Errorf("%w: %d candidates over their busy thresholds", ErrAllOverloaded, len(cands))
		}
		return res, fmt.Errorf("%w: %d candidates, none passes the constraints", ErrNoneEligible, len(cands))
	}
	res.FloorTokens = floor
	// The highest cost matters only at temperature > 0: pick finds it.
	cmin := math.Inf(1)
	sc := newScorer(cfg, req.ISL, req.BlockSize, floor, req.Utilization)
	sc.tail = req.TailTTFT
	lp := planLoRA(cfg, req, cands, out)
	// The slices in locals of the candidates' length: no bounds tests,
	// and nothing to reload from res after each call.
	bd := res.Breakdowns[:len(cands)]
	for i := range cands {
		if out[i] != ReasonNone {
			bd[i] = Breakdown{Worker: cands[i].Worker, Out: out[i], Overlap: cands[i].Overlap}
			continue
		}
		b := &bd[i]
		b.Out = ReasonNone
		// The cost as returned, not read back from b: that load would
		// wait for the store just made.
		c := sc.costInto(&cands[i], b)
		if lp.on {
			c = lp.charge(&cands[i], b)
		}
		cmin = lower(cmin, c)
	}
	if cfg.TieUtilization && cfg.Temperature <= 0 {
		res.Chosen = pickLeastBusy(res.Breakdowns, cands, cmin, rng)
		return res, nil
	}
	res.Chosen = pick(res.Breakdowns, cfg.Temperature, cmin, rng)
	return res, nil
}

// Cost computes a candidate's cost breakdown under cfg for a request of isl
// tokens with block size b, floorTokens being the load floor of the decay
// and util the fleet utilization (Request.Utilization).
func Cost(cfg Config, isl, b, floorTokens int, util float64, c *Candidate) Breakdown {
	var out Breakdown
	sc := newScorer(&cfg, isl, b, floorTokens, util)
	sc.costInto(c, &out)
	return out
}

// scorer scores the candidates of one request: it computes once what is
// the same for all of them (Select scores every worker of the fleet).
type scorer struct {
	cfg           *Config
	isl, b, floor int
	B, reqBlocks  float64
	queueFactor   float64 // queueFactor(util)
	onboard       bool    // cfg.Onboard charges
	def           Timing  // cfg.Timing.orDefault()
	defFull       float64 // def.PrefillTime of a full chunk of defChunk tokens
	defChunk      int     // 0: defFull not computed yet
	own           *Timing // the last Candidate.Timing seen (nil: none)
	ownTm         Timing  // own.orDefault()
	ownFull       float64 // as defFull, for ownTm
	ownChunk      int
	tail          float64 // Request.TailTTFT
}

func newScorer(cfg *Config, isl, b, floorTokens int, util float64) scorer {
	B := float64(b)
	return scorer{
		cfg: cfg, isl: isl, b: b, floor: floorTokens,
		B: B, reqBlocks: max(1, float64(isl)/B),
		queueFactor: queueFactor(util),
		onboard:     !cfg.Onboard.IsZero(),
		def:         cfg.Timing.orDefault(),
	}
}

// timing returns c's own timing model (c.Timing != nil), defaults
// applied, and where to cache the time of its full chunks. The model of a
// candidate without one is s.def, whose cache is s.defFull and
// s.defChunk.
func (s *scorer) timing(c *Candidate) (tm *Timing, full *float64, chunk *int) {
	if c.Timing != s.own {
		// Candidates share models (one per worker, or none): resolve a
		// model once per run of candidates using it.
		s.own, s.ownTm, s.ownChunk = c.Timing, c.Timing.orDefault(), 0
	}
	return &s.ownTm, &s.ownFull, &s.ownChunk
}

// costInto is Cost writing into out (every field but Out) and returning
// out.Cost.
func (s *scorer) costInto(c *Candidate, out *Breakdown) float64 {
	cfg, B := s.cfg, s.B
	decay := 1.0
	if cfg.CreditDecay > 0 {
		excess := c.ActivePrefillTokens
		if !cfg.DecayAbsolute {
			excess -= s.floor
		}
		excess = max(0, excess)
		decay = 1 / (1 + cfg.CreditDecay*(float64(excess)/B)/s.reqBlocks)
	}
	// The tiers' weights as an array only where a lower tier is read
	// (tierCredit, onboarding): building it costs a store per tier.
	wd := cfg.OverlapCredit * decay
	// tierCredit's common case here, not through a call.
	var credit float64
	if deviceOnly(&c.Overlap) {
		credit = atLeast(wd, 0) * float64(max(0, c.Overlap[kvevents.TierDevice]))
	} else {
		w := [kvevents.NumTiers]float64{wd, cfg.HostWeight, cfg.DiskWeight, cfg.SharedWeight}
		credit = tierCredit(&c.Overlap, &w)
	}
	out.Worker = c.Worker
	out.Overlap = c.Overlap
	out.Decay = decay
	out.Credit = credit
	out.Prob = 0
	out.LoRA = 0
	isl := s.isl
	if cfg.Cost == CostTime {
		load := 0.0
		if s.onboard {
			w := [kvevents.NumTiers]float64{wd, cfg.HostWeight, cfg.DiskWeight, cfg.SharedWeight}
			load = onboardTime(cfg, c, &w, s.b)
		}
		cost := s.costTimeInto(c, credit, load, out)
		if s.tail > 0 {
			// The tail guard, on the default model's figures.
			cost = s.tailGuard(c, out)
		}
		return cost
	}
	out.Queue, out.Passes, out.Usage, out.Imposed, out.Onboard = 0, 0, 0, 0, 0
	out.InFlight, out.Waiting, out.SlotWait = 0, 0, 0
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
	return out.Cost
}

// tieEps is the relative tolerance under which two costs tie: costs are
// sums of a few float64 terms, so exact equality would let rounding pick.
const tieEps = 1e-9

// pick fills Prob on the scored breakdowns (cmin their lowest cost) and
// draws the winner.
func pick(bs []Breakdown, temp, cmin float64, rng *rand.Rand) int {
	cmax := math.Inf(-1)
	if !(temp <= 0) {
		for i := range bs {
			if bs[i].Out == ReasonNone {
				cmax = max(cmax, bs[i].Cost)
			}
		}
	}
	if eps := tieEps * max(1, math.Abs(cmin)); temp <= 0 || cmax-cmin <= eps {
		// Lowest cost; uniform among ties.
		return drawTied(bs, func(i int) bool { return bs[i].Out == ReasonNone && bs[i].Cost-cmin <= eps }, rng)
	}
	sum := 0.0
	for i := range bs {
		if bs[i].Out == ReasonNone {
			bs[i].Prob = softmaxWeight(bs[i].Cost, cmin, cmax, temp)
			sum += bs[i].Prob
		}
	}
	u := rng.Float64() * sum
	last := -1
	for i := range bs {
		if bs[i].Out != ReasonNone {
			continue
		}
		last = i
		u -= bs[i].Prob
		bs[i].Prob /= sum
		if u < 0 {
			// Keep normalizing the rest.
			for k := i + 1; k < len(bs); k++ {
				if bs[k].Out == ReasonNone {
					bs[k].Prob /= sum
				}
			}
			return i
		}
	}
	return last // rounding: u landed at the very end
}

// tierCredit credits every leading block once, at the best weight among
// the tiers (device, host, disk) holding it: block i is held by tier t when
// i < overlap[t]. With the default weights (1 >= 0.75 >= 0.25) this is
// device + 0.75*(host beyond device) + 0.25*(disk beyond both).
func tierCredit(ov *[kvevents.NumTiers]int, w *[kvevents.NumTiers]float64) float64 {
	if deviceOnly(ov) {
		return deviceCredit(ov, w)
	}
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

// deviceOnly reports whether no lower tier holds a block of the prefix.
func deviceOnly(ov *[kvevents.NumTiers]int) bool {
	return ov[kvevents.TierHostPinned] <= 0 && ov[kvevents.TierDisk] <= 0 && ov[kvevents.TierExternal] <= 0
}

// deviceCredit is tierCredit when deviceOnly (the common case): one
// breakpoint, or none.
func deviceCredit(ov *[kvevents.NumTiers]int, w *[kvevents.NumTiers]float64) float64 {
	return atLeast(w[kvevents.TierDevice], 0) * float64(max(0, ov[kvevents.TierDevice]))
}

func softmaxWeight(c, cmin, cmax, temp float64) float64 {
	return math.Exp(-(c - cmin) / ((cmax - cmin) * temp))
}

// Probabilities returns the selection probability of each cost at
// temperature temp (DESIGN.md §4): at temp 0 (or when all costs are equal)
// 1/k for each of the k minimal costs and 0 elsewhere; otherwise
// p_i ∝ exp(-(c_i - c_min) / ((c_max - c_min) * temp)).
func Probabilities(costs []float64, temp float64) []float64 {
	p := make([]float64, len(costs))
	if len(costs) == 0 {
		return p
	}
	cmin, cmax := math.Inf(1), math.Inf(-1)
	for _, c := range costs {
		cmin, cmax = min(cmin, c), max(cmax, c)
	}
	eps := tieEps * max(1, math.Abs(cmin))
	if temp <= 0 || cmax-cmin <= eps {
		k := 0
		for _, c := range costs {
			if c-cmin <= eps {
				k++
			}
		}
		for i, c := range costs {
			if c-cmin <= eps {
				p[i] = 1 / float64(k)
			}
		}
		return p
	}
	sum := 0.0
	for i, c := range costs {
		p[i] = softmaxWeight(c, cmin, cmax, temp)
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

// pickLeastBusy is pick at temperature 0 with ties broken by the lower
// Candidate.Utilization first, then at random.
func pickLeastBusy(bs []Breakdown, cands []Candidate, cmin float64, rng *rand.Rand) int {
	eps := tieEps * max(1, math.Abs(cmin))
	// One pass finds the least utilization among the lowest costs and
	// counts the candidates at it (a pass each was most of this
	// function's time at 64 workers).
	umin, k, at := math.Inf(1), 0, -1
	for i := range bs {
		if bs[i].Out != ReasonNone || bs[i].Cost-cmin > eps {
			continue
		}
		switch u := cands[i].Utilization; {
		case u < umin:
			umin, k, at = u, 1, i
		case u == umin:
			k++
		case u != u:
			// NaN: min would make umin NaN, which no candidate
			// matches.
			umin, k = u, 0
		}
	}
	if k == 1 {
		// One candidate at the least utilization (the common case): the
		// one that set it, drawn without a second pass.
		bs[at].Prob = 1
		return at
	}
	j := 0
	if k > 1 {
		j = rng.IntN(k)
	}
	chosen := -1
	for i := range bs {
		if bs[i].Out == ReasonNone && bs[i].Cost-cmin <= eps && cands[i].Utilization <= umin {
			bs[i].Prob = 1 / float64(k)
			if j == 0 && chosen < 0 {
				chosen = i
			}
			j--
		}
	}
	return chosen
}

// drawTied gives every candidate tied(i) the same probability and draws
// one of them, in index order; rng is drawn from only when several tie.
func drawTied(bs []Breakdown, tied func(i int) bool, rng *rand.Rand) int {
	k := 0
	for i := range bs {
		if tied(i) {
			k++
		}
	}
	j := 0
	if k > 1 {
		j = rng.IntN(k)
	}
	chosen := -1
	for i := range bs {
		if tied(i) {
			bs[i].Prob = 1 / float64(k)
			if j == 0 && chosen < 0 {
				chosen = i
			}
			j--
		}
	}
	return chosen
}
