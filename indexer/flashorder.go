package indexer

import (
	"slices"

	"github.com/kvrouter/kvrouter/kvevents"
)

// A Flash lookup builds its result in slot order, and slots follow worker
// order only while workers appeared in it (slotTable.ordered). Otherwise
// the result was sorted by comparing workers, and on the conversation
// trace (kvrouter bench index, 64 workers in 2 shards, 64-block lookups
// with no writers) that sort was 23% of the lookup's CPU. The view
// carries each slot's place in worker order instead (fview.rank, computed
// when a worker takes or leaves a slot), so the result is sorted as
// integers: keys rank<<32 | index, then the overlaps are permuted in
// place.

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

// permuteByRank puts out in rank order of s0's slots and reports whether
// it could (at most orderStack overlaps, every slot ranked).
func permuteByRank(out Overlaps, s0 *mset, rank []uint32) bool {
	if len(out) > orderStack || len(out) != s0.n {
		return false
	}
	var buf [orderStack]uint64
	keys := buf[:len(out)]
	for i := range keys {
		s := s0.slot(i)
		if int(s) >= len(rank) {
			return false
		}
		keys[i] = uint64(rank[s])<<32 | uint64(i)
	}
	slices.Sort(keys)
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
