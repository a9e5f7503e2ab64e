package indexer

import "fmt"

// Check verifies Approx's structure: the expiry list holds exactly the
// held pairs, each node and member point at each other and agree on the
// expiry, the free lists hold the rest, and the per-slot counts add up.
// O(size); invariant builds run it after every Insert on small indexes.
func (a *Approx) Check() error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.check()
}

func (a *Approx) check() error {
	if len(a.nodes) == 0 {
		return fmt.Errorf("approx: no sentinel node")
	}
	listed := 0
	for prev, ni := uint32(0), a.nodes[0].next; ni != 0; prev, ni = ni, a.nodes[ni].next {
		n := &a.nodes[ni]
		if n.prev != prev {
			return fmt.Errorf("approx: node %d: prev %d, want %d", ni, n.prev, prev)
		}
		ei, ok := a.m.get(n.seq)
		if !ok {
			return fmt.Errorf("approx: node %d: block %x not in the map", ni, n.seq)
		}
		j, ok := a.entries[ei].find(n.slot)
		if !ok {
			return fmt.Errorf("approx: node %d: block %x has no member for slot %d", ni, n.seq, n.slot)
		}
		if mb := a.entries[ei].members[j]; mb.node != ni || mb.exp != n.exp {
			return fmt.Errorf("approx: node %d (exp %d) vs member node %d exp %d", ni, n.exp, mb.node, mb.exp)
		}
		if listed++; listed > len(a.nodes) {
			return fmt.Errorf("approx: expiry list has a cycle")
		}
	}
	if listed != a.blocks {
		return fmt.Errorf("approx: %d listed pairs, %d blocks", listed, a.blocks)
	}
	free := 0
	for ni := a.freeNode; ni != 0; ni = a.nodes[ni].next {
		if free++; free > len(a.nodes) {
			return fmt.Errorf("approx: free node list has a cycle")
		}
	}
	if 1+listed+free != len(a.nodes) {
		return fmt.Errorf("approx: %d nodes = 1 + %d listed + %d free?", len(a.nodes), listed, free)
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
			if n := a.nodes[mb.node]; n.seq != seq || n.slot != mb.slot {
				return fmt.Errorf("approx: entry %x slot %d: node %d is %x slot %d", seq, mb.slot, mb.node, n.seq, n.slot)
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
