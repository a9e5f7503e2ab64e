package indexer

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestPermuteByRank: a result built in slot order over slots named in
// random worker order comes out in worker order from the rank
// permutation alone (before orderOverlaps' final check), for sets of one
// member, of two, inline and in blocks, up to the largest on the stack,
// over views of few slots (rankOrder's bitmap) and of many (a sort).
func TestPermuteByRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ n, slots int }{{2, 300}, {3, 300}, {17, 300}, {64, 64}, {64, 300},
		{orderStack, 300}, {orderStack, scatterRanks}, {2, scatterRanks + 1}, {64, 3 * scatterRanks}} {
		n := c.n
		names := make([]kvevents.Worker, c.slots)
		for i := range names {
			names[i] = kvevents.Worker{ID: rng.Uint64N(1 << 20), Rank: uint32(i % 3)}
		}
		rank := workerRanks(names)
		slots := rng.Perm(len(names))[:n]
		blk := make([]fmember, n)
		for i, s := range slices.Sorted(slices.Values(slots)) {
			blk[i].slot = uint32(s)
		}
		s0 := mset{blk: blk, n: n}
		out := make(Overlaps, n)
		for i := range out {
			out[i] = Overlap{Worker: names[blk[i].slot], Blocks: int(blk[i].slot)}
		}
		if !permuteByRank(out, &s0, rank) {
			t.Fatalf("n=%d: not permuted", n)
		}
		if !slices.IsSortedFunc(out, cmpOverlap) {
			t.Fatalf("n=%d: not in worker order: %v", n, out)
		}
		for _, o := range out {
			if names[o.Blocks] != o.Worker {
				t.Fatalf("n=%d: overlap %v moved apart from its worker", n, o)
			}
		}
	}
}
