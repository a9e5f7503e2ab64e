package selector

import (
	"errors"
	"fmt"
	"math"
)

// CostModel selects the cost function.
type CostModel uint8

const (
	// CostTime (default) estimates the request's time to first token on
	// the candidate, in milliseconds, from the worker's timing model (see
	// the package doc).
	CostTime CostModel = iota
	// CostBlocks is Dynamo's cost in KV blocks (DESIGN.md §4's formula):
	// prefill_load_scale * adjusted_prefill + decode + request weight.
	CostBlocks
)

var costModelNames = [...]string{"time", "blocks"}

func (m CostModel) String() string {
	if int(m) < len(costModelNames) {
		return costModelNames[m]
	}
	return fmt.Sprintf("cost(%d)", m)
}

// ParseCostModel parses "time" or "blocks".
func ParseCostModel(s string) (CostModel, error) {
	for i, n := range costModelNames {
		if n == s {
			return CostModel(i), nil
		}
	}
	return 0, fmt.Errorf("selector: unknown cost model %q (want time or blocks)", s)
}

// Timing is a worker's forward-pass timing model (DESIGN.md §6), in
// milliseconds: a pass computing T prefill tokens costs
//
//	PrefillQuad*T² + PrefillLin*T + PrefillConst
//
// plus, when requests are decoding, DecodeQuad*p² + DecodeLin*p + DecodeConst
// where p is the fraction of KV blocks in use. The zero Timing means
// DefaultTiming (see Config.Timing).
type Timing struct {
	// Prefill polynomial in ms (per T², per T, per pass). Defaults
	// 4.21e-7, 0.01518, 16.5 (DESIGN.md §6); all fields zero means
	// DefaultTiming.
	PrefillQuad  float64 `yaml:"prefill_quad"`
	PrefillLin   float64 `yaml:"prefill_lin"`
	PrefillConst float64 `yaml:"prefill_const"`
	// Decode polynomial in ms (per p², per p, per pass). Defaults -25.74,
	// 54.01, 5.74 (DESIGN.md §6).
	DecodeQuad  float64 `yaml:"decode_quad"`
	DecodeLin   float64 `yaml:"decode_lin"`
	DecodeConst float64 `yaml:"decode_const"`
	// MaxBatchedTokens is the token budget of one pass, used when a
	// candidate does not report its own. Default 8192 (the mocker's);
	// 0 means 8192.
	MaxBatchedTokens int `yaml:"max_batched_tokens"`
}

// DefaultTiming returns the mocker's timing model (DESIGN.md §6), the
// prior of every worker's fitted model (TimingFit).
func DefaultTiming() Timing {
	return Timing{
		PrefillQuad: 4.21e-7, PrefillLin: 0.01518, PrefillConst: 16.5,
		DecodeQuad: -25.74, DecodeLin: 54.01, DecodeConst: 5.74,
		MaxBatchedTokens: 8192,
	}
}

// IsZero reports whether t is the zero Timing (= DefaultTiming).
func (t Timing) IsZero() bool { return t == Timing{} }

// orDefault returns t, or DefaultTiming when t is zero.
func (t Timing) orDefault() Timing {
	if t.IsZero() {
		return DefaultTiming()
	}
	if t.MaxBatchedTokens <= 0 {
		t.MaxBatchedTokens = 8192
	}
	return t
}

// Validate reports every problem with t: the coefficients must be finite,
// a pass must never take negative time (PrefillTime >= 0 for T >= 1,
// DecodeTime >= 0 on [0, 1]), and MaxBatchedTokens must be >= 0.
func (t Timing) Validate() error {
	if t.IsZero() {
		return nil
	}
	var errs []error
	for _, v := range []float64{t.PrefillQuad, t.PrefillLin, t.PrefillConst, t.DecodeQuad, t.DecodeLin, t.DecodeConst} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("selector: timing coefficient %v must be finite", v))
		}
	}
	if t.PrefillQuad < 0 || t.PrefillLin < 0 || t.PrefillConst < 0 {
		errs = append(errs, errors.New("selector: prefill timing coefficients must be >= 0"))
	}
	if t.DecodeConst < 0 || t.DecodeTime(1) < 0 {
		errs = append(errs, errors.New("selector: decode time must be >= 0 on [0, 1]"))
	}
	if t.MaxBatchedTokens < 0 {
		errs = append(errs, fmt.Errorf("selector: timing max batched tokens %d must be >= 0", t.MaxBatchedTokens))
	}
	return errors.Join(errs...)
}

// PrefillTime is the modeled time of a pass computing tok prefill tokens,
// in ms; 0 when tok <= 0.
func (t Timing) PrefillTime(tok float64) float64 { return t.prefillTime(tok) }

// prefillTime is PrefillTime through a pointer: the scorer's calls, once
// or more per candidate, would otherwise copy the seven-word Timing to
// the stack each time and stall reading it back.
func (t *Timing) prefillTime(tok float64) float64 {
	if tok <= 0 {
		return 0
	}
	return t.PrefillQuad*tok*tok + t.PrefillLin*tok + t.PrefillConst
}

// DecodeTime is the modeled decode share of a pass at KV usage p (clamped
// to [0, 1]), in ms.
func (t Timing) DecodeTime(p float64) float64 { return t.decodeTime(p) }

// decodeTime is DecodeTime through a pointer (see prefillTime).
func (t *Timing) decodeTime(p float64) float64 {
	p = atMost(atLeast(p, 0), 1)
	return t.DecodeQuad*p*p + t.DecodeLin*p + t.DecodeConst
}

// PrefillSpan is the modeled time to compute q prefill tokens in passes of
// at most chunk tokens (chunked prefill), in ms, and the number of passes
// (at least 1: a fully cached prompt still computes its last token).
func (t Timing) PrefillSpan(q float64, chunk int) (ms float64, passes int) {
	c := float64(max(chunk, 1))
	return t.prefillSpan(q, c, t.PrefillTime(c))
}

// prefillSpan is PrefillSpan in chunks of c tokens (>= 1) taking full ms
// each (PrefillTime(c), which the caller may have at hand).
func (t *Timing) prefillSpan(q, c, full float64) (ms float64, passes int) {
	q = atLeast(q, 1)
	// Less than a chunk (the common case), the quotient rounds below 1
	// and floors to 0: no division on the chain of dependent operations
	// each candidate's cost waits on.
	n := 0.0
	if !(q < c) {
		n = math.Floor(q / c)
	}
	rem := q - n*c
	ms = n * full
	passes = int(n)
	if rem > 0 {
		// prefillTime(rem), written out: prefillSpan stays within the
		// inlining budget.
		ms += t.PrefillQuad*rem*rem + t.PrefillLin*rem + t.PrefillConst
		passes++
	}
	return ms, passes
}

// costTimeInto computes the time cost (CostTime) of candidate c for the
// scorer's request (isl tokens, block size b, fleet utilization U), given
// c's credit in blocks (the decay already applied) and onboarding time.
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
// engine batches with it, and for a pass in flight already under way).
// With Config.PassModel and a dated pass (Candidate.PassKnown) below its
// sequence cap, ahead + mine is instead the time left of the pass in
// flight, then PrefillSpan(waiting + own): the request shares passes
// with the prefill pending behind it (pass.go, the package doc); the
// pending prefill came at once unless Candidate.PassQueue dates it. With
// Unclamped, a credit beyond the prompt (own < 1) shortens the queue ahead
// instead.
func (s *scorer) costTimeInto(c *Candidate, credit, load float64, out *Breakdown) float64 {
	cfg := s.cfg
	// The default model without a call, which would spill the scorer's
	// registers.
	tm, full, fullChunk := &s.def, &s.defFull, &s.defChunk
	if c.Timing != nil {
		tm, full, fullChunk = s.timing(c)
	}
	own := float64(s.isl) - credit*float64(s.b)
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
	decoding := max(0, c.ActiveRequests-c.PrefillRequests)
	chunk := passChunk(c, tm)
	if chunk != *fullChunk {
		*full, *fullChunk = tm.prefillTime(float64(chunk)), chunk
	}
	cf := float64(chunk)
	usage := atLeast(c.KVUsage, 0)
	if c.TotalKVBlocks > 0 {
		usage += float64(c.NewBlocks) / float64(c.TotalKVBlocks)
	}
	usage = atMost(usage, 1)
	mine, n := tm.prefillSpan(own, cf, *full)
	prefill, passes := 0.0, 0
	out.InFlight, out.Waiting, out.SlotWait = 0, 0, 0
	if cfg.PassModel && c.PassKnown && (c.MaxNumSeqs <= 0 || c.ActiveRequests < c.MaxNumSeqs) {
		// The pass in flight, then the pending prefill and the request's
		// own in shared passes (pass.go).
		dec := 0.0
		if decoding > 0 {
			dec = tm.decodeTime(c.KVUsage)
		}
		left, waiting := tm.inFlight(c.PassElapsed, c.PassTokens, c.PassQueue, ahead, chunk, dec)
		prefill, passes = tm.prefillSpan(waiting+own, cf, *full)
		prefill = max(left, load) + prefill
		out.InFlight, out.Waiting = left, waiting
		ahead = waiting
	} else {
		if ahead > 0 {
			prefill, passes = tm.prefillSpan(ahead, cf, *full)
		}
		// A load overlaps the queue ahead; its excess delays the request
		// (the engine runs other requests meanwhile: no passes are added).
		prefill = atLeast(prefill, load)
		prefill += mine
		passes += n
	}
	if cfg.PassModel && c.SlotWait > 0 {
		// At its sequence cap the engine admits the request only once
		// running ones end; its queue starts then.
		prefill += c.SlotWait
		out.SlotWait = c.SlotWait
	}
	imposed := scaled(scaled(mine, cfg.ImposedWeight), s.queueFactor)
	decode := 0.0
	if c.ActiveRequests > 0 {
		decode = float64(passes) * tm.decodeTime(usage)
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
	out.Cost = scaled(prefill+imposed, cfg.PrefillLoadScale) + decode + reqs
	return out.Cost
}

// passChunk is the prefill token budget of c's passes: its
// max_batched_tokens (tm's when unknown) less one token per decoding
// request, at least 1.
func passChunk(c *Candidate, tm *Timing) int {
	chunk := c.MaxNumBatchedTokens
	if chunk <= 0 {
		chunk = tm.MaxBatchedTokens
	}
	return max(1, chunk-max(0, c.ActiveRequests-c.PrefillRequests))
}

// MaxUtilization caps the utilization estimate in queueFactor, so a
// saturated fleet's factor stays finite (20).
const MaxUtilization = 0.95

// queueFactor is 1/(1-U): in an M/M/1 queue at utilization U, a unit of
// work costs the system 1/(1-U) units of response time (the mean response
// time is S/(1-U)): its own service and the waiting it causes the requests
// behind it. Unknown utilization (0) gives 1.
func queueFactor(u float64) float64 {
	u = min(max(u, 0), MaxUtilization)
	return 1 / (1 - u)
}

// MarshalText implements encoding.TextMarshaler (config files, flags).
func (m CostModel) MarshalText() ([]byte, error) {
	if int(m) >= len(costModelNames) {
		return nil, fmt.Errorf("selector: unknown cost model %d", m)
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseCostModel.
func (m *CostModel) UnmarshalText(b []byte) error {
	v, err := ParseCostModel(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
