package selector

import "math"

// TailQuantile is the quantile of each request's fastest predicted time
// to first token that the tail guard takes as the fleet's tail (the
// router's TailTracker): the 98th percentile.
const TailQuantile = 0.98

// TailWeight is the tail guard's weight: predicted time above the tail
// costs this many times more (scaled as tailCharge says). 10 was the
// best measured (docs/experiments/cost-terms.md).
const TailWeight = 10.0

// tailStep is TailTracker's step in log space: an estimate below a
// sample rises by a factor exp(q*tailStep), one at or above it falls by
// exp(-(1-q)*tailStep), so it settles where a fraction q of samples lie
// at or below it. 2% lets it climb to a stable quantile within a few
// hundred samples and keeps its jitter about 2%.
const tailStep = 0.02

// tailCharge is the tail guard's term (CostTime, Request.TailTTFT > 0):
// the predicted time to first token pred above the fleet's tail (ms)
// costs TailWeight times more, scaled by min(1, whole/tail)², whole
// being the request's own prefill on an idle worker. It keeps a cache
// hit from buying a request a predicted wait that puts it among the
// fleet's slowest. The scale keeps the charge where the tail is made of
// long prompts (a request whose own prefill is most of the tail: its
// extra wait is the tail) and fades it where the tail is made of
// queueing (bursts, high load), where the hits that shorten the queue
// matter more than any one request's wait. The scale depends on the
// request, not the candidate, so the charge keeps the cost increasing
// in pred (load balancing still picks the fastest). 0 when tail is
// unknown (0) or pred is at or below it.
func tailCharge(tail, pred, whole float64) float64 {
	if !(tail > 0) || !(pred > tail) {
		return 0
	}
	share := min(1, whole/tail)
	return TailWeight * share * share * (pred - tail)
}

// tailGuard adds tailCharge to the imposed term and the cost of out,
// costTimeInto's breakdown of c, and returns the cost: the guard applies
// after the default model, not inside it.
func (s *scorer) tailGuard(c *Candidate, out *Breakdown) float64 {
	tm := &s.def
	if c.Timing != nil {
		tm, _, _ = s.timing(c)
	}
	whole, _ := tm.PrefillSpan(float64(s.isl), passChunk(c, tm))
	charge := tailCharge(s.tail, out.Prefill+out.Decode, whole)
	if charge == 0 {
		return out.Cost
	}
	out.Imposed += charge
	out.Cost = scaled(out.Prefill+out.Imposed, s.cfg.PrefillLoadScale) + out.Decode + out.Requests
	return out.Cost
}

// TailTracker is a running estimate of a quantile of the fleet's fastest
// predicted time to first token per request (Request.TailTTFT): a
// stochastic approximation in log space whose only state is the
// estimate (no clock, no randomness), so replicas that see the same
// decisions agree. The zero value has no estimate. Not safe for
// concurrent use (the router updates it under its lock).
type TailTracker struct {
	est float64 // ms; 0: no sample yet
}

// Value returns the estimate in ms, 0 before the first sample.
func (t *TailTracker) Value() float64 { return t.est }

// Observe moves the estimate of quantile q (in (0, 1)) toward sample x
// (ms): the first positive sample starts it; x above the estimate raises
// it by a factor exp(q*tailStep), x at or below lowers it by
// exp(-(1-q)*tailStep). Samples that are not positive and finite are
// ignored.
func (t *TailTracker) Observe(x, q float64) {
	if !(x > 0) || math.IsInf(x, 1) {
		return
	}
	if t.est == 0 {
		t.est = x
		return
	}
	if x > t.est {
		t.est *= math.Exp(q * tailStep)
	} else {
		t.est *= math.Exp(-(1 - q) * tailStep)
	}
}
