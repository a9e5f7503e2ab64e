package selector

import (
	"errors"
	"fmt"
	"math"
)

// FitConfig configures a TimingFit.
type FitConfig struct {
	// PriorWeight is how many observations the prior is worth: the n-th
	// observation moves a scale by 1/(n + PriorWeight) of its (clipped)
	// log residual, so early noise barely moves the model. Default 20;
	// 0 means 20.
	PriorWeight float64
	// MinRate bounds the step size from below so the fit keeps tracking a
	// worker whose speed drifts. Default 0.01; 0 means 0.01.
	MinRate float64
	// Clip bounds one observation's log residual (|ln(observed/predicted)|),
	// which makes the fit robust: a stall 10x the prediction (preemption,
	// a network hiccup) moves it no more than one 2x off. Default ln 2;
	// 0 means ln 2.
	Clip float64
}

func (c FitConfig) orDefault() FitConfig {
	if c.PriorWeight <= 0 {
		c.PriorWeight = 20
	}
	if c.MinRate <= 0 {
		c.MinRate = 0.01
	}
	if c.Clip <= 0 {
		c.Clip = math.Ln2
	}
	return c
}

// TimingFit fits one worker's (or worker kind's) timing model online from
// observed latencies, with a prior Timing (the DESIGN.md §6 polynomials by
// default): the model is the prior with its prefill and its decode
// polynomials each multiplied by a scale, and the scales are fitted in
// log space by a clipped running mean of residuals (a robust M-estimate:
// outliers move it by at most Clip). Inter-token latencies fit the decode
// scale; times to first token fit the prefill scale, given the decode
// share the model predicted. The shape of the polynomials stays the
// prior's: a real engine's speed relative to the mocker is what varies
// most between GPU kinds, and two scales need few observations.
//
// A TimingFit is not safe for concurrent use; its owner serializes calls.
type TimingFit struct {
	prior      Timing
	cfg        FitConfig
	logP, logD float64
	nP, nD     float64
}

// NewTimingFit returns a fit starting at prior (zero: DefaultTiming).
func NewTimingFit(prior Timing, cfg FitConfig) *TimingFit {
	return &TimingFit{prior: prior.orDefault(), cfg: cfg.orDefault()}
}

// ErrObservation is returned for observations that carry no information
// (non-positive or non-finite latency or prediction).
var ErrObservation = errors.New("selector: unusable timing observation")

func (f *TimingFit) step(n float64) float64 {
	return max(1/(n+f.cfg.PriorWeight), f.cfg.MinRate)
}

func (f *TimingFit) clip(r float64) float64 { return min(max(r, -f.cfg.Clip), f.cfg.Clip) }

// ObserveITL records one inter-token latency (ms) of a decode pass without
// prefill at KV usage p.
func (f *TimingFit) ObserveITL(itlMS, usage float64) error {
	pred := math.Exp(f.logD) * f.prior.DecodeTime(usage)
	if !(itlMS > 0) || math.IsInf(itlMS, 0) || !(pred > 0) {
		return fmt.Errorf("%w: itl %v ms, predicted %v ms", ErrObservation, itlMS, pred)
	}
	f.nD++
	f.logD += f.step(f.nD) * f.clip(math.Log(itlMS/pred))
	return nil
}

// ObserveTTFT records one time to first token (ms) of a request whose
// routing-time Breakdown under the prior predicted prefillMS of prefill
// passes and decodeMS of decode shares (Breakdown.Prefill and .Decode with
// Config.Timing = the fit's prior). The residual left after the fitted
// decode share updates the prefill scale, weighted by the prefill's share
// of the prediction.
func (f *TimingFit) ObserveTTFT(ttftMS, prefillMS, decodeMS float64) error {
	sp, sd := math.Exp(f.logP), math.Exp(f.logD)
	pred := sp*prefillMS + sd*max(decodeMS, 0)
	if !(ttftMS > 0) || math.IsInf(ttftMS, 0) || !(prefillMS > 0) || !(pred > 0) {
		return fmt.Errorf("%w: ttft %v ms, predicted %v ms", ErrObservation, ttftMS, pred)
	}
	f.nP++
	share := sp * prefillMS / pred
	f.logP += f.step(f.nP) * f.clip(math.Log(ttftMS/pred)) * share
	return nil
}

// Scales returns the fitted prefill and decode scales (1 = the prior).
func (f *TimingFit) Scales() (prefill, decode float64) { return math.Exp(f.logP), math.Exp(f.logD) }

// Timing returns the fitted model: the prior's polynomials times the
// scales. Put it in Candidate.Timing for that worker.
func (f *TimingFit) Timing() Timing {
	t := f.prior
	sp, sd := f.Scales()
	t.PrefillQuad *= sp
	t.PrefillLin *= sp
	t.PrefillConst *= sp
	t.DecodeQuad *= sd
	t.DecodeLin *= sd
	t.DecodeConst *= sd
	return t
}
