package replay

import (
	"math"
	"math/rand/v2"
	"strings"
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
	if hi := math.Exp(0.01 + t95At(3)*s/2); math.Abs(v.High-hi) > 1e-12 || v.Outcome != "met" || v.RoundsNeeded != 0 {
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

// autoRounds feeds ratio(i) round by round to Judge against goal and
// StopRounds, as BenchFrontend's auto rounds do, and returns the rounds
// run, the final verdict and why they stopped.
func autoRounds(ratio func(i int) float64, goal float64, even bool) (int, Verdict, string) {
	var rs []float64
	for {
		v := Judge(rs, goal)
		if stop, why := StopRounds(len(rs), []Verdict{v}, even); stop {
			return len(rs), v, why
		}
		rs = append(rs, ratio(len(rs)))
	}
}

// TestStopRounds: the auto-rounds rule on synthetic rounds. A ratio far
// from its goal stops at MinAutoRounds; one whose mean sits on the goal
// runs to MaxAutoRounds undecided; noisy rounds near the goal stop once
// the bound clears it, on the right side; with even, never after an odd
// round.
func TestStopRounds(t *testing.T) {
	tight := func(i int) float64 { return 1.0 + 0.002*float64(i%2) }
	if n, v, why := autoRounds(tight, 1.05, true); n != MinAutoRounds || v.Outcome != "met" || why != "every verdict decided" {
		t.Errorf("tight below the goal: %d rounds, %s (%s)", n, v.Outcome, why)
	}
	onGoal := func(i int) float64 { return 1.05 * math.Exp(0.03*float64(1-2*(i%2))) }
	if n, v, why := autoRounds(onGoal, 1.05, true); n != MaxAutoRounds || v.Outcome != "undecided" || !strings.Contains(why, "maximum") {
		t.Errorf("on the goal: %d rounds, %s (%s)", n, v.Outcome, why)
	}
	for _, tc := range []struct {
		truth   float64
		outcome string
	}{{1.01, "met"}, {1.10, "missed"}} {
		r := rand.New(rand.NewPCG(1, 2))
		noisy := func(int) float64 { return tc.truth * math.Exp(0.03*r.NormFloat64()) }
		n, v, _ := autoRounds(noisy, 1.05, true)
		if v.Outcome != tc.outcome || n < MinAutoRounds || n > MaxAutoRounds || n%2 != 0 {
			t.Errorf("noisy around %.2fx: %d rounds, %+v, want %s after an even number", tc.truth, n, v, tc.outcome)
		}
		if v.Outcome == "met" && v.High >= 1.05 || v.Outcome == "missed" && v.Low <= 1.05 {
			t.Errorf("noisy around %.2fx: bound %.3f-%.3f does not clear the goal", tc.truth, v.Low, v.High)
		}
	}
	decided := []Verdict{{Outcome: "met"}, {Outcome: "missed"}}
	for _, tc := range []struct {
		n    int
		vs   []Verdict
		even bool
		stop bool
	}{
		{MinAutoRounds - 1, decided, false, false}, // too few rounds to trust the spread
		{MinAutoRounds + 1, decided, true, false},  // odd: the phase orders unbalanced
		{MinAutoRounds + 1, decided, false, true},  // interleaved rounds have no order
		{MinAutoRounds + 2, append(decided, Verdict{Outcome: "undecided"}), true, false},
		{MaxAutoRounds, []Verdict{{Outcome: "undecided"}}, true, true},
	} {
		if stop, _ := StopRounds(tc.n, tc.vs, tc.even); stop != tc.stop {
			t.Errorf("StopRounds(%d, %v, even %v) = %v", tc.n, tc.vs, tc.even, stop)
		}
	}
}
