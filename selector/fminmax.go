package selector

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
