package indexer

import "fmt"

// Check verifies Approx's structure: the generation queue holds exactly
// the held pairs, each member's generation is queued, lists it once and
// agrees on the slot and the expiry, the free lists hold the rest, and the
// per-slot counts add up. O(size); invariant builds run it after every
// Insert on small indexes.
func (a *Approx) Check() error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.check()
}

func (a *Approx) check() error {
	if len(a.gens) == 0 {
		return fmt.Errorf("approx: no sentinel generation")
	}
	queued := make(map[uint32]int) // generation -> pairs found in its list
	listed, n, inv := 0, 0, 0
	for prev, gi := uint32(0), a.gens[0].next; gi != 0; prev, gi = gi, a.gens[gi].next {
		gp := &a.gens[gi]
		inv += a.inverted(prev, gi)
		if gp.prev != prev {
			return fmt.Errorf("approx: generation %d: prev %d, want %d", gi, gp.prev, prev)
		}
		if n++; n > len(a.gens) {
			return fmt.Errorf("approx: generation queue has a cycle")
		}
		if gp.live <= 0 {
			return fmt.Errorf("approx: queued generation %d holds %d pairs", gi, gp.live)
		}
		if gp.lo < 0 || gp.lo > len(gp.ents) {
			return fmt.Errorf("approx: generation %d: list starts at %d of %d", gi, gp.lo, len(gp.ents))
		}
		seen := make(map[uint32]bool, len(gp.ents))
		live := 0
		for _, ei := range gp.ents[gp.lo:] {
			if int(ei) >= len(a.entries) {
				return fmt.Errorf("approx: generation %d lists entry %d of %d", gi, ei, len(a.entries))
			}
			j, ok := a.member(ei, gi)
			if !ok {
				continue
			}
			if seen[ei] {
				return fmt.Errorf("approx: generation %d lists entry %d twice", gi, ei)
			}
			seen[ei] = true
			if mb := a.entries[ei].members[j]; mb.exp != gp.exp {
				return fmt.Errorf("approx: generation %d (exp %d) holds entry %d slot %d at exp %d", gi, gp.exp, ei, mb.slot, mb.exp)
			}
			live++
		}
		if live != gp.live {
			return fmt.Errorf("approx: generation %d lists %d pairs, counts %d", gi, live, gp.live)
		}
		// settle compacts; only the queue's head, which a prune may have
		// stopped in, may hold more stale items.
		if n := len(gp.ents) - gp.lo; prev != 0 && n >= 2*gp.live+compactMin {
			return fmt.Errorf("approx: generation %d lists %d items for %d pairs", gi, n, gp.live)
		}
		queued[gi] = live
		listed += live
	}
	if listed != a.blocks {
		return fmt.Errorf("approx: %d queued pairs, %d blocks", listed, a.blocks)
	}
	if inv != a.inversions {
		return fmt.Errorf("approx: %d generations out of expiry order, counted %d", inv, a.inversions)
	}
	free := 0
	for gi := a.freeGen; gi != 0; gi = a.gens[gi].next {
		if free++; free > len(a.gens) {
			return fmt.Errorf("approx: free generation list has a cycle")
		}
		if len(a.gens[gi].ents) != 0 || a.gens[gi].lo != 0 {
			return fmt.Errorf("approx: free generation %d lists %d entries from %d", gi, len(a.gens[gi].ents), a.gens[gi].lo)
		}
	}
	if 1+n+free != len(a.gens) {
		return fmt.Errorf("approx: %d generations = 1 + %d queued + %d free?", len(a.gens), n, free)
	}
	listCap := 0
	for i := range a.gens {
		listCap += cap(a.gens[i].ents)
	}
	if listCap != a.listCap {
		return fmt.Errorf("approx: generation lists hold %d items, counted %d", listCap, a.listCap)
	}
	counts := make([]int, len(a.counts))
	members, low := 0, 0
	for seq, ei := range a.m.all() {
		e := &a.entries[ei]
		if e.seq != seq || len(e.members) == 0 {
			return fmt.Errorf("approx: entry %d of %x: seq %x, %d members", ei, seq, e.seq, len(e.members))
		}
		for j, mb := range e.members {
			if j > 0 && e.members[j-1].slot >= mb.slot {
				return fmt.Errorf("approx: entry %x: members out of order", seq)
			}
			if _, ok := queued[mb.gen]; !ok || a.gens[mb.gen].slot != mb.slot {
				return fmt.Errorf("approx: entry %x slot %d: generation %d not queued or of another slot", seq, mb.slot, mb.gen)
			}
			counts[mb.slot]++
			members++
			if mb.exp <= a.chaos {
				low++
			}
			if mb.exp > a.maxExp {
				return fmt.Errorf("approx: entry %x slot %d expires at %d, after maxExp %d", seq, mb.slot, mb.exp, a.maxExp)
			}
		}
	}
	if members != a.blocks {
		return fmt.Errorf("approx: %d members, %d blocks", members, a.blocks)
	}
	if low != a.low {
		return fmt.Errorf("approx: %d pairs expire at or before chaos, counted %d", low, a.low)
	}
	for _, ei := range a.freeEntry {
		if len(a.entries[ei].members) != 0 {
			return fmt.Errorf("approx: free entry %d has members", ei)
		}
	}
	if a.m.len()+len(a.freeEntry) != len(a.entries) {
		return fmt.Errorf("approx: %d entries = %d used + %d free?", len(a.entries), a.m.len(), len(a.freeEntry))
	}
	for s, c := range counts {
		if c != a.counts[s] {
			return fmt.Errorf("approx: slot %d holds %d blocks, counted %d", s, c, a.counts[s])
		}
		if used := s < len(a.slots.used) && a.slots.used[s]; (c > 0) != used {
			return fmt.Errorf("approx: slot %d holds %d blocks, in use %v", s, c, used)
		}
	}
	return nil
}
