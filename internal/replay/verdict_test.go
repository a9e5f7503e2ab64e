package replay

import (
	"math"
	"testing"
)

func TestJudge(t *testing.T) {
	// Log ratios 0.01 ± 0.02 over 4 rounds: bound 1.645*s/2.
	r := []float64{math.Exp(-0.01), math.Exp(0.03), math.Exp(-0.01), math.Exp(0.03)}
	v := Judge(r, 1.05)
	s := math.Sqrt(4 * 0.02 * 0.02 / 3)
	if math.Abs(v.Spread-s) > 1e-12 || math.Abs(math.Log(v.Mean)-0.01) > 1e-12 {
		t.Fatalf("mean %v spread %v, want %v %v", math.Log(v.Mean), v.Spread, 0.01, s)
	}
	if hi := math.Exp(0.01 + z95*s/2); math.Abs(v.High-hi) > 1e-12 || v.Outcome != "met" || v.RoundsNeeded != 0 {
		t.Fatalf("%+v, want high %v and met", v, hi)
	}
	if want := int(math.Ceil(math.Pow(z95*s/math.Log(1.025), 2))); v.ResolutionRounds != want {
		t.Fatalf("resolution rounds %d, want %d", v.ResolutionRounds, want)
	}
	if want := math.Exp(0.01); math.Abs(v.Median-want) > 1e-12 {
		t.Fatalf("median %v, want %v", v.Median, want)
	}
	// The same spread around 1.2x misses 1.05x.
	for i := range r {
		r[i] *= 1.2
	}
	if v := Judge(r, 1.05); v.Outcome != "missed" {
		t.Fatalf("%+v, want missed", v)
	}
	// One stalled round moves the mean, not the median.
	if v := Judge([]float64{1.01, 1.02, 1.03, 100}, 1.05); math.Abs(v.Median-math.Sqrt(1.02*1.03)) > 1e-12 || v.Mean < 3 {
		t.Fatalf("stalled round: %+v", v)
	}
	// Around the goal with a wide spread: undecided, and the rounds that
	// would decide it follow the formula.
	wide := []float64{1.05 * math.Exp(0.3), 1.05 * math.Exp(-0.2), 1.05 * math.Exp(0.05)}
	v = Judge(wide, 1.05)
	m := (0.3 - 0.2 + 0.05) / 3
	var ss float64
	for _, x := range []float64{0.3, -0.2, 0.05} {
		ss += (x - m) * (x - m)
	}
	s = math.Sqrt(ss / 2)
	if want := int(math.Ceil(math.Pow(z95*s/m, 2))); v.Outcome != "undecided" || v.RoundsNeeded != want {
		t.Fatalf("%+v, want undecided with %d rounds needed", v, want)
	}
	if v := Judge([]float64{1.1, 0}, 1.05); v.Rounds != 1 || v.Outcome != "undecided" || v.RoundsNeeded != -1 || math.Abs(v.Median-1.1) > 1e-12 {
		t.Fatalf("one usable round: %+v", v)
	}
}
