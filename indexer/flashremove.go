package indexer

import (
	"cmp"
	"slices"
)

// Flash's Removed events out of leaf-first order. Entries hold no
// position (fchunk), so remove cannot sort an event's hashes deepest
// first up front; its first pass drops, in event order, every hash that
// is a leaf for the worker by then, and removeDeferred the rest.

// removeDeferred removes keys, the hashes of a Removed event that still
// had children held by the worker in remove's first pass, and reports
// false when the event stopped (see yield). Its first pass takes them in
// reverse order, which drops a root-first chain leaf-first; whatever
// still has children after it (descendants the event does not name, or a
// mixed order) goes deepest first by its parent links, with its
// descendants (removeDescendants), as a sort by position did before: so
// a hash the event names is never counted unknown for having gone with an
// ancestor. Cost: O(depth) per hash of that last pass, which is rare.
func (f *Flash) removeDeferred(slot uint32, table *htable, keys []rmKey) bool {
	w := len(keys) // keys[w:] still have children, in event order
	for i := len(keys) - 1; i >= 0; i-- {
		if n := len(keys) - 1 - i; n > 0 && n%warmSpan == 0 && !f.yield(slot, table, noEntry) {
			return false
		}
		k := keys[i]
		ti, ei, _, j, kids, ok := f.held(slot, table, k)
		if !ok {
			continue
		}
		if kids > 0 {
			w--
			keys[w] = k
			continue
		}
		f.removeLeafAt(slot, table, ti, ei, j)
	}
	rest := keys[w:]
	for i := range rest {
		rest[i].depth = 0
		if ei, ok := table.get(rest[i].h); ok {
			for p := f.parent(ei); p != noEntry; p = f.parent(p) {
				rest[i].depth++
			}
		}
	}
	slices.SortStableFunc(rest, func(a, b rmKey) int { return cmp.Compare(b.depth, a.depth) })
	for n, k := range rest {
		if n > 0 && n%warmSpan == 0 && !f.yield(slot, table, noEntry) {
			return false
		}
		ti, ei, _, j, kids, ok := f.held(slot, table, k)
		if !ok {
			continue
		}
		if kids > 0 {
			f.removeDescendants(slot, table, ei)
			ti = table.slot(k.h)
			j, _ = f.find(f.at(ei), slot)
		}
		f.removeLeafAt(slot, table, ti, ei, j)
	}
	return true
}

// removeDescendants drops slot from every descendant of entry ei it holds.
// Entries have no child links (that is what keeps them small), so this
// scans the worker's table, classifying each held entry by its parent
// links (each entry once: the worker's entries are prefix-closed, so the
// links stay within the table); engines evict leaf-first, so it is rare.
func (f *Flash) removeDescendants(slot uint32, table *htable, ei uint32) {
	type held struct {
		h     uint64
		e     uint32
		depth int32
	}
	below := map[uint32]int32{ei: 0} // entry -> depth below ei, -1 when not below
	var out []held
	var path []uint32
	for h, x := range table.all() {
		path = path[:0]
		d := int32(-1)
		for p := x; p != noEntry; p = f.parent(p) {
			if v, ok := below[p]; ok {
				d = v
				break
			}
			path = append(path, p)
		}
		for j := len(path) - 1; j >= 0; j-- {
			if d >= 0 {
				d++
			}
			below[path[j]] = d
		}
		if d = below[x]; d > 0 {
			out = append(out, held{h, x, d})
		}
	}
	slices.SortFunc(out, func(a, b held) int { return cmp.Compare(b.depth, a.depth) })
	for _, c := range out {
		f.removeLeaf(slot, table, c.h, c.e)
	}
}

// held locates the worker's block k.h for removal: its worker-table slot
// ti (k.ti when that still holds it), entry ei (e), member index j and that
// member's child count; ok false (counted unknown) when the worker does
// not hold k.h.
func (f *Flash) held(slot uint32, table *htable, k rmKey) (ti int, ei uint32, e *fentry, j int, kids uint32, ok bool) {
	if ti = int(k.ti); !table.holds(ti, k.h) {
		ti = table.slot(k.h)
	}
	if ti < 0 {
		f.unknown++
		return ti, 0, nil, 0, 0, false
	}
	ei = table.s[ti].v
	e = f.at(ei)
	j, _ = f.find(e, slot)
	return ti, ei, e, j, f.kids(e, j), true
}
