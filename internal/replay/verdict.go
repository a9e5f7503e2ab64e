package replay

import (
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
// give a one-sided 95% bound m ± 1.645·s/√n (normal approximation; with
// few rounds it is optimistic, so Rounds is a lower estimate). The goal is
// met when the upper bound is below log(goal), missed when the lower bound
// is above it, and undecided otherwise; Rounds is then how many rounds
// would decide it if the mean and spread stayed as measured:
// ⌈(1.645·s / |log(goal) − m|)²⌉. ResolutionRounds is the rounds a bound
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
	half := z95 * s / math.Sqrt(float64(len(logs)))
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
