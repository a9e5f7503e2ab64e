package indexer

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"unsafe"

	"github.com/kvrouter/kvrouter/internal/invariants"
	"github.com/kvrouter/kvrouter/kvevents"
)

// Radix is a prefix tree over local hashes (DESIGN.md §3). A node is one
// block under one exact prefix: its children are keyed by local hash, so
// equal local hashes under different parents are different nodes. Each node
// lists the worker+ranks holding it (sorted by slot, with the engine hash
// each uses for it), and each worker has a table engine-hash -> node so that
// events reach their nodes in O(1).
//
// Invariant: a worker's nodes are prefix-closed (a worker in a node is in
// its parent), so a child's worker set is a subset of its parent's and a
// walk only needs to notice which workers drop out.
//
// Radix is safe for concurrent use (one RWMutex: FindMatches reads, Apply
// writes).
type Radix struct {
	mu      sync.RWMutex
	root    rnode
	slots   slotTable
	tables  []map[uint64]*rnode // slot -> engine hash -> node; nil when free
	scratch []rremove

	nodes, blocks, children int // children: entries in rnode.more maps
	memberCap               int
	applied, rejected       uint64
	unknown                 uint64
}

type rnode struct {
	local  uint64
	parent *rnode
	depth  int32
	// Children: most nodes have at most one, kept inline; a map (a full
	// swiss-table group, ~200 bytes) only for the rest.
	first   *rnode
	more    map[uint64]*rnode
	members []rmember // sorted by slot
}

func (n *rnode) child(l uint64) *rnode {
	if c := n.first; c != nil && c.local == l {
		return c
	}
	return n.more[l]
}

// addChild links c (not yet a child); it reports whether a map entry was
// used.
func (n *rnode) addChild(c *rnode) bool {
	if n.first == nil {
		n.first = c
		return false
	}
	if n.more == nil {
		n.more = make(map[uint64]*rnode, 1)
	}
	n.more[c.local] = c
	return true
}

// delChild unlinks c; it reports whether a map entry was freed.
func (n *rnode) delChild(c *rnode) bool {
	if n.first == c {
		n.first = nil
		// Promote one map entry so that child() stays correct.
		for l, m := range n.more {
			n.first = m
			delete(n.more, l)
			n.compact()
			return true
		}
		return false
	}
	delete(n.more, c.local)
	n.compact()
	return true
}

func (n *rnode) compact() {
	if len(n.more) == 0 {
		n.more = nil
	}
}

func (n *rnode) numChildren() int {
	if n.first == nil {
		return 0
	}
	return 1 + len(n.more)
}

// eachChild calls fn for every child until it returns false.
func (n *rnode) eachChild(fn func(*rnode) bool) {
	if n.first == nil || !fn(n.first) {
		return
	}
	for _, c := range n.more {
		if !fn(c) {
			return
		}
	}
}

// rmember is one worker holding a node: its slot, the engine hash it uses
// for the node, and how many of the node's children it holds.
type rmember struct {
	slot uint32
	kids uint32
	hash uint64
}

type rremove struct {
	n    *rnode
	hash uint64
}

var _ Index = (*Radix)(nil)

// NewRadix returns an empty radix tree. Only cfg's index-independent fields
// matter (none today); it is taken for symmetry with the other indexes.
func NewRadix(cfg Config) *Radix {
	_ = cfg
	return &Radix{root: rnode{depth: -1}}
}

func (n *rnode) find(slot uint32) (int, bool) {
	return slices.BinarySearchFunc(n.members, slot, func(m rmember, s uint32) int { return cmp.Compare(m.slot, s) })
}

// Apply implements Index.
func (r *Radix) Apply(ev *kvevents.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	switch ev.Kind {
	case kvevents.KindStored:
		err = r.store(ev)
	case kvevents.KindRemoved:
		r.remove(ev)
	case kvevents.KindCleared:
		if slot, ok := r.slots.lookup(ev.Worker()); ok {
			r.clear(slot)
		}
	default:
		err = fmt.Errorf("kind %d: %w", ev.Kind, ErrBadEvent)
	}
	if err != nil {
		r.rejected++
		return wrapApply(ev, err)
	}
	r.applied++
	r.maybeCheck()
	return nil
}

func (r *Radix) store(ev *kvevents.Event) error {
	w := ev.Worker()
	slot, ok := r.slots.lookup(w)
	var table map[uint64]*rnode
	if ok {
		table = r.tables[slot]
	}
	if err := validateStore(ev, func(h uint64) bool { _, ok := table[h]; return ok }); err != nil {
		return err
	}
	if len(ev.Blocks) == 0 {
		return nil
	}
	if !ok {
		slot = r.slots.acquire(w)
		for int(slot) >= len(r.tables) {
			r.tables = append(r.tables, nil)
		}
		table = make(map[uint64]*rnode)
		r.tables[slot] = table
	}
	cur := &r.root
	if ev.HasParent {
		cur = table[ev.Parent]
	}
	for _, b := range ev.Blocks {
		if n, ok := table[b.Hash]; ok {
			cur = n
			continue
		}
		child := cur.child(b.Local)
		if child == nil {
			child = &rnode{local: b.Local, parent: cur, depth: cur.depth + 1}
			if cur.addChild(child) {
				r.children++
			}
			r.nodes++
		}
		i, held := child.find(slot)
		if held {
			cur = child
			continue
		}
		oldCap := cap(child.members)
		child.members = slices.Insert(child.members, i, rmember{slot: slot, hash: b.Hash})
		r.memberCap += cap(child.members) - oldCap
		if cur != &r.root {
			j, _ := cur.find(slot)
			cur.members[j].kids++
		}
		table[b.Hash] = child
		r.blocks++
		cur = child
	}
	return nil
}

func (r *Radix) remove(ev *kvevents.Event) {
	slot, ok := r.slots.lookup(ev.Worker())
	if !ok {
		r.unknown += uint64(len(ev.Hashes))
		return
	}
	table := r.tables[slot]
	todo := r.scratch[:0]
	for _, h := range ev.Hashes {
		if n, ok := table[h]; ok {
			todo = append(todo, rremove{n, h})
		}
	}
	// Deepest first: evicting a whole chain in one event then removes
	// leaves only and counts nothing as unknown.
	slices.SortStableFunc(todo, func(a, b rremove) int { return cmp.Compare(b.n.depth, a.n.depth) })
	r.unknown += uint64(len(ev.Hashes) - len(todo))
	for _, x := range todo {
		if table[x.hash] != x.n {
			r.unknown++ // listed twice, or already dropped with an ancestor
			continue
		}
		r.removeSubtree(slot, table, x.n)
	}
	clear(todo)
	r.scratch = todo[:0]
	if len(table) == 0 {
		r.freeSlot(slot)
	}
}

// removeSubtree drops slot from n and every descendant it holds.
func (r *Radix) removeSubtree(slot uint32, table map[uint64]*rnode, n *rnode) {
	i, _ := n.find(slot)
	if kids := n.members[i].kids; kids > 0 {
		held := make([]*rnode, 0, kids)
		n.eachChild(func(c *rnode) bool {
			if _, ok := c.find(slot); ok {
				held = append(held, c)
			}
			return len(held) < int(kids)
		})
		for _, c := range held {
			r.removeSubtree(slot, table, c)
		}
		i, _ = n.find(slot)
	}
	delete(table, n.members[i].hash)
	n.members = slices.Delete(n.members, i, i+1)
	r.blocks--
	if p := n.parent; p != &r.root {
		j, _ := p.find(slot)
		p.members[j].kids--
	}
	if len(n.members) == 0 {
		r.detach(n)
	}
}

// detach unlinks a node that no worker holds (and so has no children).
func (r *Radix) detach(n *rnode) {
	if invariants.Enabled && n.numChildren() != 0 {
		panic("indexer: detaching a radix node with children")
	}
	if n.parent.delChild(n) {
		r.children--
	}
	r.memberCap -= cap(n.members)
	r.nodes--
	n.parent = nil
}

func (r *Radix) clear(slot uint32) {
	table := r.tables[slot]
	for _, n := range table {
		i, _ := n.find(slot)
		n.members = slices.Delete(n.members, i, i+1)
	}
	r.blocks -= len(table)
	for _, n := range table {
		// Children of an emptied node are emptied too (prefix closure);
		// detach them before their parent so detach's check holds.
		r.detachEmpty(n)
	}
	r.freeSlot(slot)
}

func (r *Radix) detachEmpty(n *rnode) {
	if n.parent == nil || len(n.members) != 0 {
		return
	}
	var kids []*rnode
	n.eachChild(func(c *rnode) bool { kids = append(kids, c); return true })
	for _, c := range kids {
		r.detachEmpty(c)
	}
	r.detach(n)
}

func (r *Radix) freeSlot(slot uint32) {
	r.tables[slot] = nil
	r.slots.release(slot)
}

// RemoveWorker implements Index.
func (r *Radix) RemoveWorker(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, slot := range r.slots.ranksOf(id) {
		r.clear(slot)
	}
	r.maybeCheck()
}

// FindMatches implements Index.
func (r *Radix) FindMatches(locals []uint64) Overlaps { return r.AppendMatches(nil, locals) }

// AppendMatches appends the FindMatches result to dst and returns it; with
// enough capacity in dst it does not allocate.
func (r *Radix) AppendMatches(dst Overlaps, locals []uint64) Overlaps {
	if len(locals) == 0 {
		return dst
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	cur := r.root.child(locals[0])
	if cur == nil {
		return dst
	}
	// dst[base+i] is the overlap of s0[i] (see Flash.AppendMatches).
	base := len(dst)
	s0 := cur.members
	for _, m := range s0 {
		dst = append(dst, Overlap{Worker: r.slots.names[m.slot], Blocks: -1})
	}
	out := dst[base:]
	depth := 1
	for _, l := range locals[1:] {
		next := cur.child(l)
		if next == nil {
			break
		}
		if len(next.members) != len(cur.members) {
			markLostR(out, s0, cur.members, next.members, depth)
		}
		cur = next
		depth++
	}
	for i := range out {
		if out[i].Blocks < 0 {
			out[i].Blocks = depth
		}
	}
	sortOverlaps(out)
	return dst
}

// markLostR is markLost for radix members.
func markLostR(out Overlaps, s0, a, b []rmember, depth int) {
	if lost := len(a) - len(b); 2*lost*bits.Len(uint(len(s0))) > len(s0) {
		// Many lost: one linear pass. The unmarked entries of out are
		// exactly a (drops are found in position order).
		j := 0
		for i, m := range s0 {
			if out[i].Blocks >= 0 {
				continue
			}
			if j < len(b) && b[j].slot == m.slot {
				j++
			} else {
				out[i].Blocks = depth
			}
		}
		return
	}
	d, i := 0, 0
	for len(a)-i > len(b)-(i-d) {
		lo, hi := i, len(b)+d
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if a[m].slot != b[m-d].slot {
				hi = m
			} else {
				lo = m + 1
			}
		}
		j, _ := slices.BinarySearchFunc(s0, a[lo].slot, func(m rmember, s uint32) int { return cmp.Compare(m.slot, s) })
		out[j].Blocks = depth
		d++
		i = lo + 1
	}
}

// Dump implements Index.
func (r *Radix) Dump() []kvevents.Event {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []kvevents.Event
	for _, slot := range r.slots.sorted() {
		table := r.tables[slot]
		blocks := make([]dumpBlock, 0, len(table))
		for h, n := range table {
			b := dumpBlock{hash: h, local: n.local}
			if n.parent != &r.root {
				i, _ := n.parent.find(slot)
				b.hasParent, b.parent = true, n.parent.members[i].hash
			}
			blocks = append(blocks, b)
		}
		out = dumpWorker(out, r.slots.names[slot], blocks)
	}
	return out
}

// Stats implements Index. Bytes counts nodes, member slices (by capacity),
// children maps and per-worker tables, with maps estimated by mapBytes.
func (r *Radix) Stats() Stats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	bytes := int64(r.nodes)*roundAlloc(unsafe.Sizeof(rnode{})) +
		int64(r.memberCap)*int64(unsafe.Sizeof(rmember{})) +
		mapBytes(r.children, 8+ptrSize) +
		mapBytes(r.blocks, 8+ptrSize) +
		int64(len(r.tables))*int64(ptrSize+unsafe.Sizeof(kvevents.Worker{}))
	return Stats{
		Blocks: r.blocks, Nodes: r.nodes, Workers: len(r.slots.ids), Bytes: bytes,
		Applied: r.applied, Rejected: r.rejected, UnknownRemove: r.unknown,
	}
}

func (r *Radix) maybeCheck() {
	if invariants.Enabled && r.blocks <= invariantsLimit {
		if err := r.check(); err != nil {
			panic(err)
		}
	}
}

// Check verifies the tree against the per-worker tables (forward and
// reverse maps agree, prefix closure, counters). It is O(size); invariant
// builds run it after every write on small indexes.
func (r *Radix) Check() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.check()
}

func (r *Radix) check() error {
	nodes, blocks := 0, 0
	var walk func(n *rnode) error
	walk = func(n *rnode) error {
		var kids []*rnode
		n.eachChild(func(c *rnode) bool { kids = append(kids, c); return true })
		if len(n.more) != 0 && (n.first == nil || n.more[n.first.local] != nil) {
			return fmt.Errorf("radix: children of %x badly split", n.local)
		}
		for _, c := range kids {
			l := c.local
			nodes++
			if n.child(l) != c || c.parent != n || c.depth != n.depth+1 {
				return fmt.Errorf("radix: node %x badly linked", l)
			}
			if len(c.members) == 0 {
				return fmt.Errorf("radix: node %x held by nobody", l)
			}
			for i, m := range c.members {
				blocks++
				if i > 0 && c.members[i-1].slot >= m.slot {
					return fmt.Errorf("radix: node %x members unsorted", l)
				}
				if int(m.slot) >= len(r.tables) || r.tables[m.slot][m.hash] != c {
					return fmt.Errorf("radix: node %x slot %d hash %d missing from table", l, m.slot, m.hash)
				}
				if n != &r.root {
					if _, ok := n.find(m.slot); !ok {
						return fmt.Errorf("radix: node %x slot %d not prefix-closed", l, m.slot)
					}
				}
				kids := 0
				c.eachChild(func(g *rnode) bool {
					if _, ok := g.find(m.slot); ok {
						kids++
					}
					return true
				})
				if kids != int(m.kids) {
					return fmt.Errorf("radix: node %x slot %d kids %d want %d", l, m.slot, m.kids, kids)
				}
			}
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(&r.root); err != nil {
		return err
	}
	tb := 0
	for slot, t := range r.tables {
		if t != nil {
			if !r.slots.used[slot] || len(t) == 0 {
				return fmt.Errorf("radix: slot %d table inconsistent", slot)
			}
			tb += len(t)
		}
	}
	if nodes != r.nodes || blocks != r.blocks || tb != blocks {
		return fmt.Errorf("radix: counted nodes %d blocks %d table %d, have %d %d", nodes, blocks, tb, r.nodes, r.blocks)
	}
	return nil
}
