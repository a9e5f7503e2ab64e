package benchindex

import (
	"context"
	"math"
	"slices"
	"time"
)

// SearchOptions shape a search for the sustained rate.
type SearchOptions struct {
	// Start is the first offered rate (block ops/s). Zero (the default):
	// half the capacity an unpaced replay measures first.
	Start float64
	// Precision stops the bisection once the lowest failing rate is within
	// 1+Precision of the highest sustained one. Default 0.05.
	Precision float64
	// MaxSteps bounds the paced steps (the half-rate step not counted).
	// Default 16.
	MaxSteps int
	// Replay options; Window is set per step.
	Replay ReplayOptions
	// HalfThreadCPU times the lookups' thread CPU in the replay at half the
	// sustained rate (ReplayOptions.ThreadCPU), where the latencies are
	// the point; the other steps measure wall time only, so the clock
	// reads do not lower the sustained rate. Default false.
	HalfThreadCPU bool
	// OnStep, when set, is called after each step.
	OnStep func(Result)
}

func (o *SearchOptions) defaults() {
	if o.Precision <= 0 {
		o.Precision = 0.05
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 16
	}
}

// Search is one search for the sustained rate of one index.
type Search struct {
	Capacity  Result   `json:"capacity"` // the unpaced step (Start 0 only)
	Steps     []Result `json:"steps"`    // paced steps, in the order they ran
	Found     bool     `json:"found"`    // some paced step sustained its rate
	Sustained Result   `json:"sustained"`
	Half      Result   `json:"half"` // paced at half the sustained rate
}

// WindowFor returns the replay window that offers rate block ops/s.
func WindowFor(tl *Timeline, rate float64) time.Duration {
	return time.Duration(float64(tl.BlockOps()) / rate * float64(time.Second))
}

// FindSustained searches for the highest offered rate a fresh target from f
// sustains (Result.Sustains: every op issued within 1.01x the window, all
// complete within 1.10x, valid). It doubles (or halves) the offered rate
// from Start until it has a sustained rate and a failing one, then bisects
// (geometric mean) until the failing rate is within 1+Precision of the
// sustained one; it finally replays at half the sustained rate, for the
// lookup latencies there. Every step replays the whole timeline.
func FindSustained(ctx context.Context, tl *Timeline, f TargetFactory, opt SearchOptions) (Search, error) {
	opt.defaults()
	var out Search
	step := func(rate float64, cpu bool) (Result, error) {
		ro := opt.Replay
		ro.Window = WindowFor(tl, rate)
		ro.ThreadCPU = ro.ThreadCPU || cpu
		s, err := Replay(ctx, tl, f, ro)
		if err != nil {
			return Result{}, err
		}
		r := NewResult(f.Name, tl, s)
		if opt.OnStep != nil {
			opt.OnStep(r)
		}
		return r, nil
	}
	rate := opt.Start
	var err error
	if rate <= 0 {
		ro := opt.Replay
		ro.Window = 0
		var s Sample
		s, err = Replay(ctx, tl, f, ro)
		if err != nil {
			return out, err
		}
		out.Capacity = NewResult(f.Name, tl, s)
		if opt.OnStep != nil {
			opt.OnStep(out.Capacity)
		}
		rate = out.Capacity.BlockOpsPerSec / 2
	}
	out.Steps, out.Sustained, out.Found, err = bisect(rate, opt, tl, func(r float64) (Result, error) { return step(r, false) })
	if err != nil || !out.Found {
		return out, err
	}
	out.Half, err = step(out.Sustained.OfferedBlockOpsPerSec/2, opt.HalfThreadCPU)
	return out, err
}

// bisect runs paced steps from rate: doubling after a sustained step and
// halving after a failed one until it has both, then at the geometric mean
// of the highest sustained and the lowest failed rate, until they are
// within 1+Precision or MaxSteps ran. It returns every step and the best
// sustained one.
func bisect(rate float64, opt SearchOptions, tl *Timeline, step func(float64) (Result, error)) (steps []Result, best Result, found bool, err error) {
	var pass, fail float64 // highest sustained, lowest failed offered rate
	for range opt.MaxSteps {
		if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) || WindowFor(tl, rate) <= 0 {
			break
		}
		r, err := step(rate)
		if err != nil {
			return steps, best, found, err
		}
		steps = append(steps, r)
		if r.Sustains() {
			pass = max(pass, rate)
			if !found || r.OfferedBlockOpsPerSec > best.OfferedBlockOpsPerSec {
				best, found = r, true
			}
		} else if fail == 0 || rate < fail {
			fail = rate
		}
		switch {
		case pass > 0 && fail > 0:
			if fail <= pass*(1+opt.Precision) {
				return steps, best, found, nil
			}
			rate = math.Sqrt(pass * fail)
		case pass > 0:
			rate = 2 * pass
		default:
			rate = fail / 2
		}
	}
	return steps, best, found, nil
}

// Summary condenses repeated searches of one index: the spread of the
// sustained rate and the latencies of the median repetition.
type Summary struct {
	Index string `json:"index"`
	// Rates are the sustained offered block ops/s per repetition (0: none
	// sustained).
	Rates     []float64 `json:"rates"`
	Median    float64   `json:"median"`
	Min       float64   `json:"min"`
	Max       float64   `json:"max"`
	SpreadPct float64   `json:"spread_pct"` // (max-min)/median
	// At and Half are the median repetition's sustained step and its
	// half-rate step.
	At   Result `json:"at"`
	Half Result `json:"half"`
}

// Summarize returns the Summary of searches of one index (in any order).
func Summarize(index string, ss []Search) Summary {
	sum := Summary{Index: index}
	if len(ss) == 0 {
		return sum
	}
	order := make([]int, len(ss))
	for i := range ss {
		order[i] = i
		sum.Rates = append(sum.Rates, ss[i].Sustained.OfferedBlockOpsPerSec)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := ss[a].Sustained.OfferedBlockOpsPerSec, ss[b].Sustained.OfferedBlockOpsPerSec
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	med := ss[order[(len(order)-1)/2]]
	sum.Median = med.Sustained.OfferedBlockOpsPerSec
	sum.Min = ss[order[0]].Sustained.OfferedBlockOpsPerSec
	sum.Max = ss[order[len(order)-1]].Sustained.OfferedBlockOpsPerSec
	if sum.Median > 0 {
		sum.SpreadPct = 100 * (sum.Max - sum.Min) / sum.Median
	}
	sum.At, sum.Half = med.Sustained, med.Half
	return sum
}
