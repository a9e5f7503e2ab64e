package indexer

import "slices"

// Generations: Approx's expiry order. Every Insert starts a generation,
// queued in Insert order, holding its worker slot, its expiry and the
// entries of the pairs it set, in the order it visited them (block 0
// first). A pair belongs to the generation that last set its expiry
// (amember.gen); a later Insert that refreshes it takes it over, so a
// refresh writes the member alone and does no list surgery. A generation
// left with no pair is freed at once.
//
// Expiry sweeps and pruning take the oldest generation's pairs from its
// list's end, deepest block first: the same order as a list of pairs
// ordered by the Insert that last set their expiry, deepest first within
// one Insert (what TestApproxDifferential's reference does).
//
// A taken pair's item stays in the older list, stale: the sweep skips it
// (the member names another generation). Prompts share prefixes, so an
// Insert usually takes a prefix of an older list (the same prompt again,
// a conversation's next turn, a shared system prompt): take sees that
// each taken item is the next one from the list's start and settle then
// cuts them off (gen.lo) instead of leaving them stale. Other stale items
// are compacted away when they outnumber the live ones, which at least
// halves the list: O(1) amortized per item, and lists stay within about
// twice the pairs held.
//
// A list holds entry indexes, not hashes: a stale item may name an entry
// since freed and reused, but a member of this slot there belongs to a
// later generation (this one's id is not reused while it is queued), so
// the member check never takes a stranger's pair.

// agen is one generation (Insert).
type agen struct {
	exp  int64    // the Insert's expiry, unix nanoseconds
	ents []uint32 // entries visited, block 0 first; ents[lo:] are current
	lo   int
	live int // pairs it holds
	slot uint32
	// Queue links (0: the sentinel); a free generation chains through next.
	prev, next uint32
}

// takeRun counts the pairs an Insert takes over from generation gen in a
// row: pre of them the leading items of its list (ents[lo:lo+pre]), other
// the rest.
type takeRun struct {
	gen        uint32 // 0: none
	g          *agen  // &gens[gen] (gens does not grow during an Insert)
	pre, other int
}

// compactMin is the number of stale items below which a generation's
// list is not compacted.
const compactMin = 32

// newGen queues a new generation for slot expiring at exp, with room for
// n items, at the tail, or with byExp after the last one expiring at or
// before exp.
func (a *Approx) newGen(exp int64, slot uint32, n int, byExp bool) uint32 {
	gi := a.freeGen
	if gi != 0 {
		a.freeGen = a.gens[gi].next
	} else {
		a.gens = append(a.gens, agen{})
		gi = uint32(len(a.gens) - 1)
	}
	gp := &a.gens[gi]
	old := cap(gp.ents)
	gp.ents = slices.Grow(gp.ents[:0], n)
	a.listCap += cap(gp.ents) - old
	gp.exp, gp.lo, gp.live, gp.slot = exp, 0, 0, slot
	after := a.gens[0].prev
	for byExp && after != 0 && a.gens[after].exp > exp {
		after = a.gens[after].prev
	}
	gp.prev, gp.next = after, a.gens[after].next
	a.inversions += a.inverted(after, gi) + a.inverted(gi, gp.next) - a.inverted(after, gp.next)
	a.gens[gp.next].prev = gi
	a.gens[after].next = gi
	return gi
}

// inverted is 1 if queued generations x before y (0: the sentinel, in
// order with all) expire out of order, else 0.
func (a *Approx) inverted(x, y uint32) int {
	if x != 0 && y != 0 && a.gens[x].exp > a.gens[y].exp {
		return 1
	}
	return 0
}

// allAliveAt reports whether every pair held is unexpired at t: the
// queue is in expiry order and its head expires after t. A lookup then
// counts a block's holders without reading their expiries (aliveAt).
func (a *Approx) allAliveAt(t int64) bool {
	head := a.gens[0].next
	return a.inversions == 0 && (head == 0 || a.gens[head].exp > t)
}

// dropGen unqueues generation gi (holding no pair) and frees it, keeping
// its list's memory for reuse.
func (a *Approx) dropGen(gi uint32) {
	gp := &a.gens[gi]
	a.inversions += a.inverted(gp.prev, gp.next) - a.inverted(gp.prev, gi) - a.inverted(gi, gp.next)
	a.gens[gp.prev].next = gp.next
	a.gens[gp.next].prev = gp.prev
	gp.ents, gp.lo = gp.ents[:0], 0
	gp.prev, gp.next = 0, a.freeGen
	a.freeGen = gi
}

// leave records that a pair of generation gi is gone, freeing gi when it
// was the last.
func (a *Approx) leave(gi uint32) {
	gp := &a.gens[gi]
	if gp.live--; gp.live == 0 {
		a.dropGen(gi)
	}
}

// take counts the pair of entry ei, taken over from run.gen.
func (run *takeRun) take(ei uint32) {
	if run.other == 0 {
		// The generation lists ei once, so a match is this pair's item.
		if k := run.g.lo + run.pre; k < len(run.g.ents) && run.g.ents[k] == ei {
			run.pre++
			return
		}
	}
	run.other++
}

// settle applies a run of taken pairs to their generation: the leading
// ones are cut off its list, and the list is compacted when its stale
// items outnumber its pairs.
func (a *Approx) settle(run *takeRun) {
	if run.gen == 0 {
		return
	}
	gp := &a.gens[run.gen]
	gp.lo += run.pre
	if gp.live -= run.pre + run.other; gp.live == 0 {
		a.dropGen(run.gen)
		return
	}
	if len(gp.ents)-gp.lo < 2*gp.live+compactMin {
		return
	}
	k := 0
	for _, ei := range gp.ents[gp.lo:] {
		if _, ok := a.member(ei, run.gen); ok {
			gp.ents[k] = ei
			k++
		}
	}
	a.compacted += uint64(len(gp.ents) - gp.lo - k)
	gp.ents, gp.lo = gp.ents[:k], 0
}

// member returns the index of generation gi's member in entry ei, if the
// entry still holds one for gi's slot that gi set.
func (a *Approx) member(ei uint32, gi uint32) (int, bool) {
	e := &a.entries[ei]
	j, ok := e.find(a.gens[gi].slot)
	return j, ok && e.members[j].gen == gi
}
