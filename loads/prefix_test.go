package loads

import (
	"math/rand/v2"
	"testing"
)

// TestSharedPrefixMatchesLoop checks sharedPrefix (whole runs compared at
// once, then four blocks, then one) against a block-by-block loop, for
// every length up to a few runs and the prompts parting at every
// position, including the run boundaries.
func TestSharedPrefixMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ref := func(a, b []uint64) int {
		k := 0
		for k < len(a) && k < len(b) && a[k] == b[k] {
			k++
		}
		return k
	}
	for _, n := range []int{0, 1, 3, 4, 5, prefixRun - 1, prefixRun, prefixRun + 1, 2*prefixRun + 7, 3 * prefixRun} {
		a := make([]uint64, n)
		for i := range a {
			a[i] = rng.Uint64()
		}
		for part := 0; part <= n; part++ {
			b := append([]uint64(nil), a...)
			if part < n {
				b[part] ^= 1 << rng.IntN(64)
			}
			for _, bl := range []int{n, part, max(0, n-1), n + 3} {
				bb := b
				if bl <= n {
					bb = b[:bl]
				} else {
					bb = append(append([]uint64(nil), b...), 1, 2, 3)
				}
				if got, want := sharedPrefix(a, bb), ref(a, bb); got != want {
					t.Fatalf("n=%d part=%d len(b)=%d: sharedPrefix = %d, want %d", n, part, len(bb), got, want)
				}
				if got, want := sharedPrefix(bb, a), ref(bb, a); got != want {
					t.Fatalf("n=%d part=%d len(b)=%d (swapped): sharedPrefix = %d, want %d", n, part, len(bb), got, want)
				}
			}
		}
	}
}
