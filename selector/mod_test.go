package selector

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestModMatchesMath checks mod against math.Mod bit for bit: signed
// zeros, NaN, infinities, subnormals, exact multiples and their
// neighbours, quotients at the 2^52 bound, and random operands with
// quotients of every size (the fast path and the fallback both).
func TestModMatchesMath(t *testing.T) {
	rng := rand.New(rand.NewPCG(52, 1))
	specials := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1),
		math.SmallestNonzeroFloat64, math.MaxFloat64, 1, -1, 0.1, 3, 1e-300, 1e300}
	check := func(x, y float64) {
		got, want := mod(x, y), math.Mod(x, y)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("mod(%v, %v) = %v (%#x), math.Mod = %v (%#x)", x, y, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for _, x := range specials {
		for _, y := range specials {
			check(x, y)
		}
	}
	for range 300000 {
		y := math.Ldexp(0.5+rng.Float64(), rng.IntN(80)-40)
		var x float64
		switch rng.IntN(4) {
		case 0: // any quotient up to 2^60
			x = y * math.Ldexp(rng.Float64(), rng.IntN(61))
		case 1: // an exact multiple and its neighbours
			k := float64(rng.IntN(1 << 20))
			x = k * y
			check(math.Nextafter(x, 0), y)
			check(math.Nextafter(x, math.Inf(1)), y)
		case 2: // quotients at the 2^52 bound
			x = y * math.Ldexp(1+rng.Float64()/1e6, 51+rng.IntN(2))
		default: // small times, as the pass model's
			x = rng.Float64() * 500
			y = 1 + rng.Float64()*50
		}
		check(x, y)
		check(-x, y)
	}
}
