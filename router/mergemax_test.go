package router

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
)

// mergeMax (in place when b's workers are all in a, by merging otherwise)
// equals a per-worker maximum built from a map, sorted by worker, and
// leaves it in a's buffer.
func TestMergeMaxMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 16))
	// overlaps draws a sorted list over workers (id 1..8, rank 0..1),
	// each present with probability p.
	overlaps := func(p float64) indexer.Overlaps {
		var o indexer.Overlaps
		for id := uint64(1); id <= 8; id++ {
			for rank := uint32(0); rank < 2; rank++ {
				if rng.Float64() < p {
					o = append(o, indexer.Overlap{Worker: kvevents.Worker{ID: id, Rank: rank}, Blocks: 1 + rng.IntN(9)})
				}
			}
		}
		return o
	}
	var scratch indexer.Overlaps
	inPlace, merged := 0, 0
	for range 2000 {
		a, b := overlaps(0.6), overlaps(0.2)
		if rng.IntN(2) == 0 {
			// b drawn from a's workers: the in-place case.
			b = b[:0]
			for _, o := range a {
				if rng.IntN(3) == 0 {
					b = append(b, indexer.Overlap{Worker: o.Worker, Blocks: 1 + rng.IntN(9)})
				}
			}
		}
		want := map[kvevents.Worker]int{}
		for _, o := range append(slices.Clone(a), b...) {
			want[o.Worker] = max(want[o.Worker], o.Blocks)
		}
		if mergeInPlace(slices.Clone(a), b) {
			inPlace++
		} else {
			merged++
		}
		buf := slices.Grow(slices.Clone(a), len(b))
		got := mergeMax(buf, b, &scratch)
		if len(got) > 0 && &got[0] != &buf[:1][0] {
			t.Fatalf("merge of %v and %v not in a's buffer", a, b)
		}
		if len(got) != len(want) || !slices.IsSortedFunc(got, func(x, y indexer.Overlap) int { return x.Worker.Compare(y.Worker) }) {
			t.Fatalf("mergeMax(%v, %v) = %v, want %v (sorted by worker)", a, b, got, want)
		}
		for _, o := range got {
			if o.Blocks != want[o.Worker] {
				t.Fatalf("mergeMax(%v, %v) = %v, want %v", a, b, got, want)
			}
		}
	}
	if inPlace == 0 || merged == 0 {
		t.Fatalf("cases: %d in place, %d merged; want both", inPlace, merged)
	}
}
