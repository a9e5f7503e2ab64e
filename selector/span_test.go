package selector

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPrefillSpanMatchesFloor checks prefillSpan, which skips the
// division below a chunk, against the span computed with the quotient
// always floored, bit for bit: at the chunk's neighbours (where the
// quotient could round up to 1), at whole multiples of it, for NaN and
// infinite token counts, and for random counts of every magnitude.
func TestPrefillSpanMatchesFloor(t *testing.T) {
	ref := func(tm *Timing, q, c, full float64) (float64, int) {
		q = atLeast(q, 1)
		n := math.Floor(q / c)
		rem := q - n*c
		ms, passes := n*full, int(n)
		if rem > 0 {
			ms += tm.prefillTime(rem)
			passes++
		}
		return ms, passes
	}
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for _, tm := range []Timing{DefaultTiming(), {PrefillQuad: 1e-3, PrefillLin: 0.7, PrefillConst: 3}, {}} {
		for _, chunk := range []int{1, 3, 64, 8000, 8191, 8192, 1 << 20} {
			c := float64(chunk)
			full := tm.prefillTime(c)
			qs := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, 0.5, 1, c, 2 * c, 3 * c, 7 * c}
			for _, x := range []float64{c, 2 * c, 3 * c} {
				qs = append(qs, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)), math.Nextafter(math.Nextafter(x, 0), 0))
			}
			for range 20000 {
				qs = append(qs, math.Ldexp(rng.Float64(), rng.IntN(80)-10))
			}
			for _, q := range qs {
				gotMs, gotN := tm.prefillSpan(q, c, full)
				wantMs, wantN := ref(&tm, q, c, full)
				if !same(gotMs, wantMs) || gotN != wantN {
					t.Fatalf("timing %+v chunk %d: prefillSpan(%v) = %v, %d; floored quotient gives %v, %d", tm, chunk, q, gotMs, gotN, wantMs, wantN)
				}
			}
		}
	}
}
