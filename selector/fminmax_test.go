package selector

import (
	"math"
	"math/rand/v2"
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

// TestFloorNonNegMatchesMath checks floorNonNeg against math.Floor, bit
// for bit, on its domain (x >= 0 or NaN) where they could part: +0, NaN,
// +Inf, integers and their neighbours, the 2^52 and 2^63 boundaries, and
// random values of every magnitude.
func TestFloorNonNegMatchesMath(t *testing.T) {
	xs := []float64{math.NaN(), math.Inf(1), 0, 0.5, 1, 1.5, 2, 0.999999999,
		math.SmallestNonzeroFloat64, math.MaxFloat64, 1 << 52, 1<<52 - 0.5, 1<<53 + 2, 1 << 63, 1 << 62}
	for _, x := range []float64{1 << 63, 1 << 52, 1 << 30, 8192, 3, 1} {
		xs = append(xs, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)))
	}
	rng := rand.New(rand.NewPCG(5, 2))
	for range 100000 {
		xs = append(xs, math.Ldexp(rng.Float64(), rng.IntN(130)-60))
	}
	for _, x := range xs {
		if got, want := floorNonNeg(x), math.Floor(x); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("floorNonNeg(%v) = %v, math.Floor = %v", x, got, want)
		}
	}
}
