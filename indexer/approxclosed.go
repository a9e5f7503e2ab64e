package indexer

import (
	"fmt"
	"slices"

	"github.com/kvrouter/kvrouter/internal/invariants"
)

// Prefix closure. Every Insert records a prompt's blocks from its first,
// all with one expiry. While the now values passed to Insert do not
// decrease, a block therefore never expires before any of its
// descendants held by the same worker, and the generation queue is in
// expiry order, deepest first within one Insert, so that the expiry sweep drops
// descendants no later than their ancestors: at any instant, the workers
// holding a prompt's block i+1 unexpired are a subset of those holding
// block i, and their number never grows along the prompt. A lookup then
// need not visit every block: a galloping search finds each block after
// which that number shrinks (appendMatchesClosed), as
// loads.Tracker.NewBlocksBySlot does for the active set.
//
// Two events may break the closure. An Insert whose expiry is below one
// held (now went backwards) sets chaos to maxExp, above every pair then
// held, and low to their number: the pairs that may be involved in a
// violation, or sit out of expiry order in the queue. Pruning a closed
// index can stop inside a group of pairs of one expiry (Inserts at one
// instant), keeping a descendant whose ancestor it dropped: it sets chaos
// to that expiry and low to the pairs of the group still held
// (pruneChaos). Pairs expiring after chaos were set by later Inserts,
// from a prompt's first block, and the expiry sweep reaches them only in
// order, so they form a closed set. A lookup at t may therefore gallop
// when low is zero (the suspect pairs expired, were dropped, or were
// refreshed to a later expiry) or when t >= chaos (it sees none of them
// unexpired); otherwise it walks block by block.
// TestApproxClosedLookupMatchesWalk and invariant builds hold the two
// walks equal.

// pruneChaos records a prune of a closed index that dropped pairs up to
// expiry last: the pairs still held that expire at last (the head of the
// generation queue, in expiry order) may have lost an ancestor.
func (a *Approx) pruneChaos(last int64) {
	a.chaos, a.low = last, 0
	for gi := a.gens[0].next; gi != 0 && a.gens[gi].exp <= last; gi = a.gens[gi].next {
		a.low += a.gens[gi].live
	}
}

// aliveAt returns the members of the block with sequence hash seq and how
// many of them are unexpired at t; all of them when all (allAliveAt).
func (a *Approx) aliveAt(seq uint64, t int64, all bool) ([]amember, int) {
	ei, ok := a.m.get(seq)
	if !ok {
		return nil, 0
	}
	ms := a.entries[ei].members
	if all {
		// Blocks near a prompt's root have many holders (a shared
		// prefix booked on most of the fleet): counting their expiries
		// was most of a lookup.
		return ms, len(ms)
	}
	n := 0
	for i := range ms {
		if ms[i].exp > t {
			n++
		}
	}
	return ms, n
}

// bySlotMax is the number of workers up to which appendMatchesClosed
// orders its result through a table on the stack.
const bySlotMax = 256

// slotsChanged notes that slot was acquired or released: the worker
// order (order, pos) is rebuilt before the write lock is let go.
func (a *Approx) slotsChanged() { a.orderStale = true }

// slotKnown reports whether slot has its place in the worker order.
func (a *Approx) slotKnown(slot uint32) bool {
	return int(slot) < len(a.pos) && a.pos[slot] >= 0 && a.order[a.pos[slot]] == slot
}

// rebuildOrder recomputes the worker order of the used slots if a slot
// changed (O(slots log slots), when a worker first books or leaves).
func (a *Approx) rebuildOrder() {
	if !a.orderStale {
		return
	}
	a.order = a.slots.sorted()
	a.pos = slices.Grow(a.pos[:0], len(a.slots.names))[:len(a.slots.names)]
	for i := range a.pos {
		a.pos[i] = -1
	}
	for i, slot := range a.order {
		a.pos[slot] = int32(i)
	}
	a.orderStale = false
}

// appendMatchesClosed is appendMatches of the sequence hashes seqs at t
// while the prefix closure holds for t: O(k log n) block lookups for k
// distinct overlaps, not O(n).
func (a *Approx) appendMatchesClosed(dst Overlaps, seqs []uint64, t int64) Overlaps {
	n := len(seqs)
	base := len(dst)
	if n == 0 {
		return dst
	}
	all := a.allAliveAt(t)
	// With few slots, each worker's overlap goes to its place in worker
	// order (a.pos) and they are appended in that order: the search
	// finds them deepest-last, and sorting them by worker was a fifth of
	// a lookup over 64 workers.
	var depth [bySlotMax]int32
	bySlot := !a.orderStale && len(a.order) <= bySlotMax
	cur, c := a.aliveAt(seqs[0], t, all)
	for lo := 0; c > 0; {
		// Find the last block hi-1 >= lo still held by all c workers
		// alive at lo: gallop, then bisect (lo has c, hi fewer or is n).
		hi, next, nc := n, []amember(nil), 0
		for step := 1; lo+step < n; step *= 2 {
			ms, k := a.aliveAt(seqs[lo+step], t, all)
			if k != c {
				hi, next, nc = lo+step, ms, k
				break
			}
			lo, cur = lo+step, ms
		}
		for hi-lo > 1 {
			mid := int(uint(lo+hi) >> 1)
			if ms, k := a.aliveAt(seqs[mid], t, all); k == c {
				lo, cur = mid, ms
			} else {
				hi, next, nc = mid, ms, k
			}
		}
		// The workers alive at lo but not at hi hold lo+1 blocks (all of
		// them when hi is n). Both member lists are sorted by slot. Those
		// alive at hi are a subset of those alive at lo (the closure), so
		// c-nc leave, and the walk stops at the last of them: over 64
		// workers with distinct overlaps, walking the whole list at each
		// of the k changes was a tenth of a route's time
		// (BenchmarkRouteLiveDeferred's profile).
		j, left := 0, c-nc
		for _, m := range cur {
			if left == 0 {
				break
			}
			if m.exp <= t {
				continue
			}
			for j < len(next) && next[j].slot < m.slot {
				j++
			}
			if hi < n && j < len(next) && next[j].slot == m.slot && next[j].exp > t {
				continue
			}
			left--
			if bySlot {
				depth[a.pos[m.slot]] = int32(lo + 1)
			} else {
				dst = append(dst, Overlap{Worker: a.slots.names[m.slot], Blocks: lo + 1})
			}
		}
		if hi == n {
			break
		}
		lo, cur, c = hi, next, nc
	}
	if bySlot {
		for i, d := range depth[:len(a.order)] {
			if d > 0 {
				dst = append(dst, Overlap{Worker: a.slots.names[a.order[i]], Blocks: int(d)})
			}
		}
	} else {
		sortOverlaps(dst[base:])
	}
	if invariants.Enabled {
		want := a.appendMatchesWalk(nil, seqs, true, t)
		if !slices.Equal(dst[base:], want) {
			panic(fmt.Sprintf("approx: closed lookup %v, block-by-block %v", dst[base:], want))
		}
	}
	return dst
}
