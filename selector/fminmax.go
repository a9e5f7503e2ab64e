package selector

import "math"

// Go's float min and max order -0 below +0 and propagate NaN without a
// branch: about ten dependent instructions each, on the scorer's per-
// candidate path and on its running minimum across candidates. These are
// the same functions as a compare and a predictable branch.

// atLeast is max(x, lo) for lo neither -0 nor NaN: x <= lo holds for
// x = -0 and lo = 0, and fails for x NaN, which stays.
func atLeast(x, lo float64) float64 {
	if x <= lo {
		return lo
	}
	return x
}

// atMost is min(x, hi) for hi neither ±0 nor NaN.
func atMost(x, hi float64) float64 {
	if x >= hi {
		return hi
	}
	return x
}

// lower is min(m, x) for a running minimum m, up to the sign of a zero
// minimum (which no use of it tells apart: costs are compared by
// difference): once either is NaN the result is NaN, as min's.
func lower(m, x float64) float64 {
	if x < m {
		return x
	}
	if x != x {
		return x
	}
	return m
}

// scaled is x*w, skipping the multiplication when w is 1 (the default
// weights), where it is exact: each candidate's cost is a chain of
// dependent float operations, and the CPU overlaps candidates less the
// longer it is.
func scaled(x, w float64) float64 {
	if w == 1 {
		return x
	}
	return x * w
}

// mod is math.Mod(x, y), exact as fmod is, with one division and one
// fused multiply-add when 0 < x and x/y < 2^52 for a finite y > 0 (the
// pass model's times within a pass length's multiple), else math.Mod,
// whose bit-by-bit loop (Frexp, Ldexp) took ~200 instructions a call on
// a busy fleet's every candidate. floor(x/y) is the truncated quotient q
// or q+1 (the division rounds monotonically and q is representable);
// x - n*y is then rem or rem-y, multiples of y's unit no larger than y,
// which the fused operation returns exactly, and rem-y+y is rem.
func mod(x, y float64) float64 {
	q := x / y
	if !(x > 0 && y > 0 && y <= math.MaxFloat64 && q < 1<<52) {
		return math.Mod(x, y)
	}
	r := math.FMA(-math.Floor(q), y, x)
	if r < 0 {
		r += y
	}
	return r
}
