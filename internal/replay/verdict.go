package replay

import (
	"fmt"
	"math"
	"slices"
)

// Verdict judges a latency ratio goal (e.g. frontend TTFT <= 1.05x the
// floor proxy's at p50) from per-round ratios, each round measuring both
// sides back to back so that the machine's drift cancels within a round.
//
// The estimate is the plainest one that is honest about a noisy machine:
// the rounds' log ratios are taken as independent samples of the true log
// ratio plus round-to-round noise; their mean m and standard deviation s
// give a one-sided 95% bound m ± t·s/√n, t the Student quantile for n−1
// degrees of freedom (2.35 at 4 rounds, 1.83 at 10; the normal 1.645 would
// be optimistic with so few rounds). The goal is met when the upper bound
// is below log(goal), missed when the lower bound is above it, and
// undecided otherwise; RoundsNeeded is then how many rounds would decide
// it if the mean and spread stayed as measured: ⌈(1.645·s / |log(goal) −
// m|)²⌉ (normal: a lower estimate). ResolutionRounds is the rounds a bound
// of ±(goal−1)/2 (2.5% for 1.05x) needs whatever the mean: the rounds to
// resolve the goal's own step. Median is reported beside: one round in
// which the shared machine stalled a phase for seconds moves the mean
// (and the spread) far more than the median.
type Verdict struct {
	Goal             float64 `json:"goal"`
	Rounds           int     `json:"rounds"`        // measured rounds
	Mean             float64 `json:"mean_ratio"`    // exp of the mean log ratio
	Median           float64 `json:"median_ratio"`  // robust to a round hit by a stall of the machine
	Spread           float64 `json:"spread"`        // standard deviation of the log ratios
	Low              float64 `json:"low"`           // one-sided 95% bounds on the ratio
	High             float64 `json:"high"`          //
	Outcome          string  `json:"outcome"`       // "met", "missed" or "undecided"
	RoundsNeeded     int     `json:"rounds_needed"` // rounds to decide; 0 when decided, -1 when the mean sits on the goal
	ResolutionRounds int     `json:"resolution_rounds"`
}

// z95 is the one-sided 95% normal quantile.
const z95 = 1.645

// t95 are the one-sided 95% Student t quantiles for 1..30 degrees of
// freedom; beyond, t95At interpolates toward z95 in 1/df.
var t95 = [...]float64{6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
	1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
	1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697}

// t95At is the one-sided 95% t quantile for df >= 1 degrees of freedom.
func t95At(df int) float64 {
	if df <= len(t95) {
		return t95[df-1]
	}
	last := float64(len(t95))
	return z95 + (t95[len(t95)-1]-z95)*last/float64(df)
}

// Judge returns the Verdict of ratios against goal; ratios <= 0 are
// skipped (a round without data). Fewer than two usable rounds give an
// undecided verdict with no spread.
func Judge(ratios []float64, goal float64) Verdict {
	v := Verdict{Goal: goal, Outcome: "undecided", RoundsNeeded: -1}
	var logs []float64
	for _, r := range ratios {
		if r > 0 {
			logs = append(logs, math.Log(r))
		}
	}
	v.Rounds = len(logs)
	if len(logs) == 0 {
		return v
	}
	sorted := slices.Sorted(slices.Values(logs))
	v.Median = math.Exp((sorted[(len(sorted)-1)/2] + sorted[len(sorted)/2]) / 2)
	if len(logs) < 2 {
		return v
	}
	var m float64
	for _, x := range logs {
		m += x
	}
	m /= float64(len(logs))
	var ss float64
	for _, x := range logs {
		ss += (x - m) * (x - m)
	}
	s := math.Sqrt(ss / float64(len(logs)-1))
	half := t95At(len(logs)-1) * s / math.Sqrt(float64(len(logs)))
	v.Mean, v.Spread, v.Low, v.High = math.Exp(m), s, math.Exp(m-half), math.Exp(m+half)
	g := math.Log(goal)
	switch {
	case m+half < g:
		v.Outcome, v.RoundsNeeded = "met", 0
	case m-half > g:
		v.Outcome, v.RoundsNeeded = "missed", 0
	case g != m:
		v.RoundsNeeded = int(math.Ceil(math.Pow(z95*s/(g-m), 2)))
	}
	if step := math.Log(1 + (goal-1)/2); step > 0 {
		v.ResolutionRounds = int(math.Ceil(math.Pow(z95*s/step, 2)))
	}
	return v
}

// Decided reports whether the verdict is met or missed.
func (v Verdict) Decided() bool { return v.Outcome == "met" || v.Outcome == "missed" }

// Bounds of the rounds BenchFrontend chooses itself (BenchConfig.Rounds 0).
const (
	// MinAutoRounds: below four rounds the spread is itself too uncertain
	// (t quantile 2.35 at three degrees of freedom) to stop on.
	MinAutoRounds = 4
	// MaxAutoRounds caps the run (20 rounds of three 10 s phases is ten
	// minutes); a verdict still undecided then sits within the noise of
	// its goal, and the report says how many rounds it would take.
	MaxAutoRounds = 20
)

// StopRounds is the auto-rounds rule: after n measured rounds with
// verdicts vs (one per goal line), stop once every verdict is decided (its
// one-sided 95% bound lies wholly on one side of its goal) and n >=
// MinAutoRounds, or at MaxAutoRounds whatever the verdicts. With even,
// it stops only after an even number of rounds, so that each phase order
// of sequential rounds is measured equally often. The reason is said in
// why.
func StopRounds(n int, vs []Verdict, even bool) (stop bool, why string) {
	if even && n%2 == 1 {
		return false, ""
	}
	if n >= MaxAutoRounds {
		return true, fmt.Sprintf("reached the maximum of %d rounds", MaxAutoRounds)
	}
	if n < MinAutoRounds {
		return false, ""
	}
	for _, v := range vs {
		if !v.Decided() {
			return false, ""
		}
	}
	return true, "every verdict decided"
}
