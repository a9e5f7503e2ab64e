package indexer

import (
	"sync/atomic"
)

// Finding which workers a stride lost (flashread.go): in exact mode the
// bisection only records where the count falls (bisectExact), and the
// lost workers are marked afterwards (markDrops), from the set words'
// sums where one worker is lost at a depth, instead of a binary search
// over the member block of the set after each drop (a cache miss per
// step on an index larger than the caches).
//
// NB: BenchmarkLookupDropouts flash (64 workers dropping at the 64
// positions of a 64-block prompt, 2M (worker, block) pairs): that search
// was 73% of the lookup, whose p50 went 14.1 -> 3.5 us. Cold lines are
// most of a lookup; of the ways tried to overlap their misses only
// prefetching the first window's home id slots won (prefetchSlots: no-writer
// p50 on the conversation trace 1.43 -> 1.25 us with one shard). What was
// tried and dropped is in docs/experiments/indexer-flash-lookup.md.

// bisectExact is bisectSafe's walk in exact mode (sets only shrink with
// depth, so a count that falls is a drop) without marking: it appends the
// offset of every position in lo+1..hi whose count is below the one before
// it (nlo workers matching at lo, set shi at hi).
//
// The right half is a loop and a half without a drop is not entered, so
// only a left half with a drop costs a call.
func (r *reader) bisectExact(win *window, lo, hi, nlo int, shi uint64, drops []int32) []int32 {
	nhi := memCount(shi)
	for nhi != nlo {
		if hi == lo+1 {
			return append(drops, int32(hi-win.base))
		}
		mid := lo + (hi-lo)/2
		k := mid - win.base // win.get, inlined by hand
		var smid uint64
		if _, e := r.indexAt(win.seqs[k], win.homes[k], win.size); e != nil {
			smid = atomic.LoadUint64(&e.mem)
		}
		win.sets[k] = smid
		nmid := memCount(smid)
		if nmid != nlo {
			drops = r.bisectExact(win, lo, mid, nlo, smid, drops)
		}
		lo, nlo = mid, nmid
	}
	return drops
}

// markDrops marks the workers lost at each position of drops (offsets in
// win, in increasing order) as markLost does. Where one worker is lost
// and every slot is below 2^memSumBits, it is the slot whose bits make up
// the difference of the two sets' sums (memSum) and the block goes
// unread; such a worker stays in alive and aslots as a hole (its alive
// index noEntry) until a drop that needs markLost compacts them, so the
// walk does not compact them at every stride (live counts the others;
// holes says some are). A lookup that reads sets of different states
// makes nonsense of the sums, but it is then redone in safe mode
// (AppendMatches); a slot not found falls back to markLost.
//
// pos maps a slot of aslots to its index there when every slot is below
// 2^memSumBits (slotPos); markDrops refills it when it compacts aslots.
func (r *reader) markDrops(out Overlaps, alive, aslots []uint32, live int, holes bool, pos *slotPos, win *window, drops []int32) ([]uint32, []uint32, int, bool) {
	// The largest slot bounds the live ones (holes keep their slots).
	small := len(aslots) > 0 && aslots[len(aslots)-1] <= memSumMask
	var xa uint32
	if small {
		// The live slots are the members of the set at win.base (exact
		// mode), so their sum is in its word: no pass over them per
		// stride.
		var ok bool
		if xa, ok = memSum(win.sets[0]); !ok {
			xa = liveSum(alive, aslots)
		}
	}
	for _, k := range drops {
		m, depth := win.sets[k], win.base+int(k)
		if xb, ok := memSum(m); small && ok && live-memCount(m) == 1 {
			if i := int(pos[xa^xb]); i < len(aslots) && aslots[i] == xa^xb && alive[i] != noEntry {
				out[alive[i]].Blocks = depth
				alive[i], holes = noEntry, true
				live--
				xa = xb
				continue
			}
		}
		if holes {
			alive, aslots = dropLost(alive, aslots)
			holes = false
		}
		alive, aslots = markLost(out, alive, aslots, r.resolve(m, false), depth, false)
		live = len(aslots)
		if small {
			pos.fill(aslots)
		}
		if small {
			var ok bool
			if xa, ok = memSum(m); !ok {
				xa = slotSum(aslots)
			}
		}
	}
	return alive, aslots, live, holes
}

// slotPos maps a slot below 2^memSumBits to its index in aslots (valid
// for the slots of aslots only: a caller checks aslots[i] against the
// slot). It replaced a binary search of aslots per lost worker, 112 of a
// 512-block lookup's ~250 instructions per drop over 64 workers
// (callgrind).
type slotPos [memSumMask + 1]uint16

// fill records the index of every slot of aslots (all below
// 2^memSumBits).
func (p *slotPos) fill(aslots []uint32) {
	for i, s := range aslots {
		p[s&memSumMask] = uint16(i)
	}
}

// liveSum is slotSum of the slots whose alive index is not noEntry.
func liveSum(alive, aslots []uint32) uint32 {
	var x uint32
	for i, s := range aslots {
		if alive[i] != noEntry {
			x ^= s
		}
	}
	return x & memSumMask
}

// dropLost removes the members whose alive index is noEntry from alive
// and aslots, in place.
func dropLost(alive, aslots []uint32) ([]uint32, []uint32) {
	w := 0
	for i, a := range alive {
		if a != noEntry {
			alive[w], aslots[w] = a, aslots[i]
			w++
		}
	}
	return alive[:w], aslots[:w]
}

// slotSum is the xor of slots' low memSumBits bits.
func slotSum(slots []uint32) uint32 {
	var x uint32
	for _, s := range slots {
		x ^= s
	}
	return x & memSumMask
}
