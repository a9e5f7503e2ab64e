package indexer

import "fmt"

// The O(size) self-checks of Flash and Radix: invariant builds run them
// after every write on small indexes; tests may call Check.

// Check verifies the entry map against the per-worker tables (forward and
// reverse maps agree, prefix closure, child counts, entry and member-set
// pools). O(size).
func (f *Flash) Check() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.check()
}

func (f *Flash) check() error {
	if err := f.slots.checkOrdered(); err != nil {
		return err
	}
	if err := f.checkView(); err != nil {
		return err
	}
	blocks := 0
	kids := make(map[[2]uint64]int)        // (parent seq, slot) -> held children
	setsUsed := make([]bool, len(f.arena)) // arena slots in a block
	var err error
	f.each(func(seq uint64, ei uint32) bool {
		err = f.checkEntry(seq, ei, setsUsed, kids, &blocks)
		return err == nil
	})
	if err != nil {
		return err
	}
	free := len(f.free)
	freed := make(map[uint32]bool, free)
	// Free and retired entries may keep their last member's set word
	// (dropLeaf): out of the id table is what makes them unused.
	for _, i := range f.free {
		if freed[i] || f.holds(f.at(i).seq, i) {
			return fmt.Errorf("flash: free entry %d in use or freed twice", i)
		}
		freed[i] = true
	}
	for _, l := range f.rcu.limbo {
		for _, i := range l.entries {
			if f.holds(f.at(i).seq, i) {
				return fmt.Errorf("flash: retired entry %d in use", i)
			}
		}
		for _, b := range l.blocks {
			if err := markBlock(setsUsed, b.off, b.class); err != nil {
				return err
			}
		}
	}
	inTable := 0
	f.each(func(uint64, uint32) bool { inTable++; return true })
	if inTable != f.m.n || 4*(f.m.n+f.m.tomb) > 3*len(f.m.slots) {
		return fmt.Errorf("flash: id table holds %d, counts %d of %d slots", inTable, f.m.n, len(f.m.slots))
	}
	if f.used != f.m.n || f.used+free+f.retiredEntries() > len(f.chunks)*fchunkSize {
		return fmt.Errorf("flash: %d entries used, %d free, %d in map", f.used, free, f.m.n)
	}
	for c, l := range f.freeB {
		for _, off := range l {
			if err := markBlock(setsUsed, off, c); err != nil {
				return err
			}
		}
	}
	for i, u := range setsUsed {
		if !u {
			return fmt.Errorf("flash: member arena slot %d in no block", i)
		}
	}
	tb := 0
	for slot, t := range f.tables {
		if t == nil {
			continue
		}
		if !f.slots.used[slot] || t.len() == 0 {
			return fmt.Errorf("flash: slot %d table inconsistent", slot)
		}
		for h, ei := range t.all() {
			tb++
			e := f.at(ei)
			i, ok := f.find(e, uint32(slot))
			if !ok || !f.holds(e.seq, ei) {
				return fmt.Errorf("flash: slot %d hash %d: entry does not list it", slot, h)
			}
			if got := kids[[2]uint64{e.seq, uint64(slot)}]; got != int(f.kids(e, i)) {
				return fmt.Errorf("flash: slot %d hash %d kids %d want %d", slot, h, f.kids(e, i), got)
			}
		}
	}
	if blocks != f.blocks || tb != blocks {
		return fmt.Errorf("flash: counted blocks %d table %d, have %d", blocks, tb, f.blocks)
	}
	return nil
}

// checkEntry verifies one entry of the id table (part of check).
func (f *Flash) checkEntry(seq uint64, ei uint32, setsUsed []bool, kids map[[2]uint64]int, blocks *int) error {
	e := f.at(ei)
	if !f.holds(seq, ei) {
		return fmt.Errorf("flash: entry %d unreachable in the id table", seq)
	}
	if e.seq != seq || e.count() == 0 {
		return fmt.Errorf("flash: entry %d bad key or empty", seq)
	}
	if e.count() >= 2 {
		if err := markBlock(setsUsed, uint32(e.mem), blockClass(e.count())); err != nil {
			return fmt.Errorf("flash: entry %d: %w", seq, err)
		}
		if x, ok := memSum(e.mem); ok == (e.count() > memNMask) || ok && x != blockSum(f.block(e)) {
			return fmt.Errorf("flash: entry %d: set word %#x does not sum its members", seq, e.mem)
		}
	}
	want := f.local(ei)
	var p *fentry
	if pi := f.parent(ei); pi != noEntry {
		p = f.at(pi)
		want = prefixID(p.seq, f.local(ei))
		if !f.holds(p.seq, pi) {
			return fmt.Errorf("flash: entry %d badly linked", seq)
		}
	}
	if want != seq {
		return fmt.Errorf("flash: entry %d has wrong prefix id", seq)
	}
	ms := f.memberList(e)
	for i, m := range ms {
		*blocks++
		if i > 0 && ms[i-1].slot >= m.slot {
			return fmt.Errorf("flash: entry %d members unsorted", seq)
		}
		if p != nil {
			if _, ok := f.find(p, m.slot); !ok {
				return fmt.Errorf("flash: entry %d slot %d not prefix-closed", seq, m.slot)
			}
			kids[[2]uint64{p.seq, uint64(m.slot)}]++
		}
	}
	return nil
}

// holds reports whether the id table maps seq to entry ei.
func (f *Flash) holds(seq uint64, ei uint32) bool {
	i, ok := f.get(seq)
	return ok && i == ei
}

// Check verifies the tree against the per-worker tables (forward and
// reverse maps agree, prefix closure, counters, node and member-set pools).
// It is O(size); invariant builds run it after every write on small
// indexes.
func (r *Radix) Check() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.check()
}

func (r *Radix) check() error {
	if err := r.slots.checkOrdered(); err != nil {
		return err
	}
	nodes, blocks, children, kidMaps, sets := 0, 0, 0, 0, 0
	var walk func(ni uint32) error
	walk = func(ni uint32) error {
		n := r.at(ni)
		var kids []uint32
		r.eachChild(n, func(c uint32) bool { kids = append(kids, c); return true })
		if (n.first == noNode) != (n.firstp == nil) || (n.first != noNode && n.firstp != r.at(n.first)) {
			return fmt.Errorf("radix: first child pointer of %x stale", n.local)
		}
		if n.more != 0 {
			m := r.kids[n.more-1]
			if len(m) == 0 || n.first == noNode {
				return fmt.Errorf("radix: children of %x badly split", n.local)
			}
			if _, dup := m[r.at(n.first).local]; dup {
				return fmt.Errorf("radix: children of %x badly split", n.local)
			}
			children += len(m)
			kidMaps++
		}
		for _, ci := range kids {
			c := r.at(ci)
			l := c.local
			nodes++
			if r.child(n, l) != ci || c.parent != ni || c.depth != n.depth+1 {
				return fmt.Errorf("radix: node %x badly linked", l)
			}
			if c.n == 0 {
				return fmt.Errorf("radix: node %x held by nobody", l)
			}
			if c.n >= 2 {
				sets++
				if int(c.n) != len(r.sets[c.set]) {
					return fmt.Errorf("radix: node %x member set size", l)
				}
			}
			ms := r.members(c)
			for i, m := range ms {
				blocks++
				if i > 0 && ms[i-1].slot >= m.slot {
					return fmt.Errorf("radix: node %x members unsorted", l)
				}
				if int(m.slot) >= len(r.tables) {
					return fmt.Errorf("radix: node %x slot %d has no table", l, m.slot)
				}
				if got, ok := r.tables[m.slot].get(m.hash); !ok || got != ci {
					return fmt.Errorf("radix: node %x slot %d hash %d missing from table", l, m.slot, m.hash)
				}
				if ni != rootNode {
					if _, ok := r.find(n, m.slot); !ok {
						return fmt.Errorf("radix: node %x slot %d not prefix-closed", l, m.slot)
					}
				}
				kids := 0
				r.eachChild(c, func(g uint32) bool {
					if _, ok := r.find(r.at(g), m.slot); ok {
						kids++
					}
					return true
				})
				if kids != int(m.kids) {
					return fmt.Errorf("radix: node %x slot %d kids %d want %d", l, m.slot, m.kids, kids)
				}
			}
			if err := walk(ci); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(rootNode); err != nil {
		return err
	}
	tb := 0
	for slot, t := range r.tables {
		if t != nil {
			if !r.slots.used[slot] || t.len() == 0 {
				return fmt.Errorf("radix: slot %d table inconsistent", slot)
			}
			tb += t.len()
		}
	}
	if nodes != r.nodes || blocks != r.blocks || tb != blocks || children != r.children {
		return fmt.Errorf("radix: counted nodes %d blocks %d table %d children %d, have %d %d %d", nodes, blocks, tb, children, r.nodes, r.blocks, r.children)
	}
	free := 0
	for i := r.free; i != noNode; i = r.at(i).parent {
		if n := r.at(i); n.n != 0 || n.depth != freeDepth {
			return fmt.Errorf("radix: free node %d in use", i)
		}
		free++
	}
	if 1+nodes+free != int(r.hwm) || kidMaps+len(r.freeK) != len(r.kids) || sets+len(r.freeS) != len(r.sets) {
		return fmt.Errorf("radix: pools: %d nodes + %d free of %d, %d+%d of %d child maps, %d+%d of %d member sets",
			nodes, free, r.hwm, kidMaps, len(r.freeK), len(r.kids), sets, len(r.freeS), len(r.sets))
	}
	return nil
}

// markBlock marks the arena slots of the block of class c at off, which
// must lie in the arena and overlap no block marked before.
func markBlock(used []bool, off uint32, c int) error {
	end := int(off) + 1<<c
	if end > len(used) {
		return fmt.Errorf("flash: member block %d+%d beyond the arena (%d)", off, 1<<c, len(used))
	}
	for i := int(off); i < end; i++ {
		if used[i] {
			return fmt.Errorf("flash: member block %d+%d overlaps another", off, 1<<c)
		}
		used[i] = true
	}
	return nil
}
