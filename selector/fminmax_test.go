package selector

import (
	"math"
	"testing"
)

// TestClampsMatchMinMax checks atLeast, atMost and lower against Go's
// float min and max on the values where they could part: signed zeros,
// NaN, infinities and the bounds themselves.
func TestClampsMatchMinMax(t *testing.T) {
	negZero := math.Copysign(0, -1)
	xs := []float64{math.NaN(), math.Inf(-1), -2, -1, negZero, 0, 0.5, 1, 2, math.Inf(1)}
	same := func(a, b float64) bool {
		if math.IsNaN(a) || math.IsNaN(b) {
			return math.IsNaN(a) && math.IsNaN(b)
		}
		return a == b && math.Signbit(a) == math.Signbit(b)
	}
	for _, x := range xs {
		for _, lo := range []float64{0, 1, -1, 0.5} {
			if got, want := atLeast(x, lo), max(x, lo); !same(got, want) {
				t.Errorf("atLeast(%v, %v) = %v, max = %v", x, lo, got, want)
			}
		}
		for _, hi := range []float64{1, -1, 0.5} {
			if got, want := atMost(x, hi), min(x, hi); !same(got, want) {
				t.Errorf("atMost(%v, %v) = %v, min = %v", x, hi, got, want)
			}
		}
	}
	// lower over every sequence of two and three: NaN-ness and value as
	// min's, the sign of a zero aside.
	for _, a := range xs {
		for _, b := range xs {
			for _, c := range xs {
				got, want := lower(lower(a, b), c), min(a, b, c)
				if math.IsNaN(got) != math.IsNaN(want) || (!math.IsNaN(want) && got != want) {
					t.Errorf("lower(lower(%v, %v), %v) = %v, min = %v", a, b, c, got, want)
				}
			}
		}
	}
}
