package selector

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
)

// The default timing is the mocker's (DESIGN.md §6), checked against the
// mocker's own functions.
func TestDefaultTimingIsMocker(t *testing.T) {
	tm := DefaultTiming()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, tok := range []int{1, 64, 1000, 8192} {
		if got, want := tm.PrefillTime(float64(tok)), ms(mocker.PrefillTime(tok)); math.Abs(got-want) > 1e-6 {
			t.Errorf("PrefillTime(%d) = %v, mocker %v", tok, got, want)
		}
	}
	for _, p := range []float64{0, 0.3, 0.9, 1} {
		if got, want := tm.DecodeTime(p), ms(mocker.DecodeTime(p)); math.Abs(got-want) > 1e-6 {
			t.Errorf("DecodeTime(%v) = %v, mocker %v", p, got, want)
		}
	}
	if tm.MaxBatchedTokens != mocker.DefaultConfig().MaxNumBatchedTokens {
		t.Errorf("max batched %d", tm.MaxBatchedTokens)
	}
}

// A worker 2x slower at prefill and 0.5x at decode than the prior, with
// 20% multiplicative noise and 10% of observations 10x stalls: the fit
// finds both scales within 10%; the plain mean of ratios would not.
func TestTimingFitRobust(t *testing.T) {
	const trueP, trueD = 2.0, 0.5
	prior := DefaultTiming()
	f := NewTimingFit(Timing{}, FitConfig{})
	rng := rand.New(rand.NewPCG(7, 7))
	noise := func() float64 {
		v := math.Exp(0.2 * rng.NormFloat64())
		if rng.Float64() < 0.1 {
			v *= 10
		}
		return v
	}
	var naive float64
	for i := range 4000 {
		p := rng.Float64() * 0.9
		if err := f.ObserveITL(trueD*prior.DecodeTime(p)*noise(), p); err != nil {
			t.Fatal(err)
		}
		tok := 100 + rng.Float64()*12000
		pre, _ := prior.PrefillSpan(tok, 8192)
		dec := prior.DecodeTime(p) * float64(1+int(tok/8192))
		obs := (trueP*pre + trueD*dec) * noise()
		if err := f.ObserveTTFT(obs, pre, dec); err != nil {
			t.Fatal(err)
		}
		if i >= 2000 {
			naive += obs / (pre + dec) / 2000
		}
	}
	sp, sd := f.Scales()
	if math.Abs(sp/trueP-1) > 0.1 || math.Abs(sd/trueD-1) > 0.1 {
		t.Errorf("scales %.3f / %.3f, want %v / %v", sp, sd, trueP, trueD)
	}
	if naive < 2.5 {
		t.Errorf("the stalls should mislead a plain mean (%.2f); the test is too easy", naive)
	}
	fit := f.Timing()
	if got, want := fit.PrefillTime(4096), sp*prior.PrefillTime(4096); math.Abs(got-want) > 1e-9 {
		t.Errorf("fitted PrefillTime %v, want %v", got, want)
	}
}

// Few observations barely move the prior; one huge outlier moves it by at
// most Clip/(1+PriorWeight) in log space.
func TestTimingFitPrior(t *testing.T) {
	f := NewTimingFit(Timing{}, FitConfig{})
	if err := f.ObserveITL(1e6, 0.5); err != nil {
		t.Fatal(err)
	}
	_, sd := f.Scales()
	if want := math.Exp(math.Ln2 / 21); math.Abs(sd-want) > 1e-12 {
		t.Errorf("decode scale after one 1e6 ms outlier %v, want %v", sd, want)
	}
	for _, err := range []error{f.ObserveITL(0, 0.5), f.ObserveITL(math.NaN(), 0.5), f.ObserveTTFT(10, 0, 5), f.ObserveTTFT(-1, 10, 0)} {
		if !errors.Is(err, ErrObservation) {
			t.Errorf("bad observation accepted: %v", err)
		}
	}
}
