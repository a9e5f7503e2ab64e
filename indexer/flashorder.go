package indexer

import (
	"math/bits"
	"slices"

	"github.com/kvrouter/kvrouter/kvevents"
)

// A Flash lookup builds its result in slot order, and slots follow worker
// order only while workers appeared in it (slotTable.ordered). Otherwise
// the view carries each slot's place in worker order (fview.rank, computed
// when a worker takes or leaves a slot), so the result is sorted as
// integers: keys rank<<32 | index, then the overlaps are permuted in
// place. Where the view has at most scatterRanks slots, the ranks are
// marked in a bitmap and read back in order (rankOrder), and the lookup
// places each overlap at its rank when it builds the result (placeByRank).
//
// NB: sorting by comparing workers was 23% of a no-writer lookup's CPU on
// the conversation trace (64 workers, 2 shards); the bitmap took the
// lookup's p50 1.59 -> 1.33 us (one shard) and placing by rank 1.88 ->
// 1.72 us (docs/experiments/indexer-flash-lookup.md).

// workerRanks returns, for each slot of names, its place in worker order
// (used slots have distinct names, so their ranks order them; the names
// of unused slots take places too and are never asked for).
func workerRanks(names []kvevents.Worker) []uint32 {
	bySlot := make([]uint32, len(names))
	for i := range bySlot {
		bySlot[i] = uint32(i)
	}
	slices.SortFunc(bySlot, func(a, b uint32) int { return names[a].Compare(names[b]) })
	rank := make([]uint32, len(names))
	for r, s := range bySlot {
		rank[s] = uint32(r)
	}
	return rank
}

// orderStack is the largest result orderOverlaps sorts by rank on the
// stack; larger ones are sorted by comparing workers.
const orderStack = 128

// orderOverlaps sorts out (out[i] the overlap of s0's i-th member) by
// worker, through rank (the view's that named them): permuted by rank, out
// is sorted already and sortOverlaps only checks it (len(out)
// comparisons); it sorts what the permutation could not (a result over
// orderStack, or a safe-mode lookup's sets of several states that rank
// does not match).
func orderOverlaps(out Overlaps, s0 *mset, rank []uint32) {
	permuteByRank(out, s0, rank)
	sortOverlaps(out)
}

// placeByRank sets alive[i] to the place in rank order of s0's i-th
// member (len(alive) == s0.n), so that a lookup builds its result in
// worker order from the start, and reports whether it could (at most
// orderStack members and scatterRanks slots, every slot ranked; alive is
// unchanged otherwise). It spares permuteByRank's moves of the overlaps
// at the end.
func placeByRank(alive []uint32, s0 *mset, rank []uint32, sc *rankScratch) bool {
	if len(alive) > orderStack || len(alive) != s0.n || len(rank) > scatterRanks {
		return false
	}
	keys := sc.keys[:len(alive)]
	if !rankOrder(keys, &sc.at, s0, rank) {
		return false
	}
	for j, i := range keys {
		alive[i] = uint32(j)
	}
	return true
}

// finishOrder puts a lookup's result out in worker order: nothing to do
// when the view's slots are in worker order (ordered) and a check where
// placeByRank placed it, else orderOverlaps.
func finishOrder(out Overlaps, s0 *mset, rank []uint32, ordered, placed bool) {
	switch {
	case ordered:
	case placed:
		sortOverlaps(out)
	default:
		orderOverlaps(out, s0, rank)
	}
}

// permuteByRank puts out in rank order of s0's slots and reports whether
// it could (at most orderStack overlaps, every slot ranked).
func permuteByRank(out Overlaps, s0 *mset, rank []uint32) bool {
	if len(out) > orderStack || len(out) != s0.n {
		return false
	}
	var sc rankScratch
	keys := sc.keys[:len(out)]
	if len(rank) <= scatterRanks {
		if !rankOrder(keys, &sc.at, s0, rank) {
			return false
		}
	} else {
		for i := range keys {
			s := s0.slot(i)
			if int(s) >= len(rank) {
				return false
			}
			keys[i] = uint64(rank[s])<<32 | uint64(i)
		}
		slices.Sort(keys)
	}
	// keys[j]'s low bits are the index of the overlap that goes to j:
	// follow each cycle of the permutation once, marking the places done.
	const done, idx = 1 << 31, 1<<31 - 1
	for j := range keys {
		if keys[j]&done != 0 || int(keys[j]&idx) == j {
			continue
		}
		tmp, k := out[j], j
		for {
			keys[k] |= done
			src := int(keys[k] & idx)
			if src == j {
				out[k] = tmp
				break
			}
			out[k] = out[src]
			k = src
		}
	}
	return true
}

// scatterRanks is the most slots a view may have for rankOrder (a bitmap
// of 8 words and 512 bytes of positions on the stack).
const scatterRanks = 512

// rankOrder sets keys[j] to the index in s0 of its member of j-th
// smallest rank (at is scratch, written before it is read) (len(keys) == s0.n <= orderStack, len(rank) <=
// scatterRanks), the order a sort of rank<<32 | index gives: ranks of
// distinct slots are distinct. It reports false when a slot has no rank.
func rankOrder(keys []uint64, at *[scatterRanks]uint8, s0 *mset, rank []uint32) bool {
	var seen [scatterRanks / 64]uint64 // at: index in s0 by rank (orderStack <= 256)
	for i := range keys {
		s := s0.slot(i)
		if int(s) >= len(rank) {
			return false
		}
		r := rank[s] & (scatterRanks - 1) // a no-op: rank[s] < len(rank)
		seen[r>>6] |= 1 << (r & 63)
		at[r] = uint8(i)
	}
	j := 0
	for w, x := range seen[:(len(rank)+63)/64] {
		for ; x != 0 && j < len(keys); x &= x - 1 {
			keys[j] = uint64(at[w<<6|bits.TrailingZeros64(x)])
			j++
		}
	}
	return j == len(keys)
}
