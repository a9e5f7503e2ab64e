package indexer

import (
	"cmp"
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
// Memory: nodes live in fixed-size chunks indexed by uint32 (links are
// indexes, not pointers: no heap object per block and nothing for the GC to
// scan), freed nodes are reused, a node held by one worker keeps it inline
// and only nodes held by two or more use a pooled member slice; so storing
// a new block allocates nothing amortized (BenchmarkStoreRemove radix: 34
// allocs per 16-block store+remove before, 0 after).
//
// Invariant: a worker's nodes are prefix-closed (a worker in a node is in
// its parent), so a child's worker set is a subset of its parent's and a
// walk only needs to notice which workers drop out.
//
// Radix is safe for concurrent use (one RWMutex: FindMatches reads, Apply
// writes).
type Radix struct {
	mu      sync.RWMutex
	hint    int                  // RadixConfig.BlocksPerWorker
	chunks  []*[rchunkSize]rnode // node 0 is the root
	free    uint32               // head of the free-node list (through rnode.parent)
	hwm     uint32               // nodes ever allocated
	kids    []map[uint64]uint32  // children maps of nodes with 2+ children (index+1 in rnode.more)
	freeK   []uint32
	sets    [][]rmember // member slices of nodes held by 2+ workers
	freeS   []uint32
	slots   slotTable
	tables  []*htable // slot -> engine hash -> node; nil when free
	scratch []rremove

	nodes, blocks, children int // children: entries in the kids maps
	memberCap               int
	counters                applyCounters
	unknown                 uint64
}

const (
	rchunkShift = 10
	rchunkSize  = 1 << rchunkShift
	rootNode    = uint32(0)
	noNode      = ^uint32(0)
	freeDepth   = -2 // rnode.depth of a free node (the root's is -1)
)

// rnode is one tree node; n == 0 marks a free node (or the root).
type rnode struct {
	local uint64
	// firstp is the node first names (nil when none), for FindMatches'
	// walk: a chain of dependent loads, where computing the address from
	// the index (4 ALU ops per step) made depth=1024 lookups 1.35x slower
	// than with pointer nodes. It points into a chunk, so chunks are
	// scanned by the GC; that is the price of the old lookup speed.
	firstp *rnode
	parent uint32 // noNode for the root
	depth  int32
	// Children: most nodes have at most one, kept inline; a map (a full
	// swiss-table group, ~200 bytes) only for the rest.
	first uint32 // noNode when none
	more  uint32 // 0, or 1 + index into Radix.kids
	n     uint32 // members
	set   uint32 // index into Radix.sets when n >= 2
	one   rmember
}

// rmember is one worker holding a node: its slot, the engine hash it uses
// for the node, and how many of the node's children it holds.
type rmember struct {
	slot uint32
	kids uint32
	hash uint64
}

type rremove struct {
	n    uint32
	hash uint64
}

var _ Index = (*Radix)(nil)

// NewRadix returns an empty radix tree sized by cfg.BlocksPerWorker (no
// hint by default).
func NewRadix(cfg RadixConfig) *Radix {
	r := &Radix{hint: cfg.BlocksPerWorker, free: noNode, hwm: 1, chunks: []*[rchunkSize]rnode{new([rchunkSize]rnode)}}
	*r.at(rootNode) = rnode{parent: noNode, depth: -1, first: noNode}
	return r
}

func (r *Radix) at(i uint32) *rnode { return &r.chunks[i>>rchunkShift][i&(rchunkSize-1)] }

func (r *Radix) newNode(local uint64, parent uint32, depth int32) uint32 {
	var i uint32
	if i = r.free; i != noNode {
		r.free = r.at(i).parent
	} else {
		i = r.hwm
		r.hwm++
		if int(i) == len(r.chunks)*rchunkSize {
			r.chunks = append(r.chunks, new([rchunkSize]rnode))
		}
	}
	*r.at(i) = rnode{local: local, parent: parent, depth: depth, first: noNode}
	r.nodes++
	return i
}

func (r *Radix) freeNode(i uint32) {
	*r.at(i) = rnode{parent: r.free, depth: freeDepth}
	r.free = i
	r.nodes--
}

func (r *Radix) child(n *rnode, l uint64) uint32 {
	if c := n.first; c != noNode && r.at(c).local == l {
		return c
	}
	if n.more != 0 {
		if c, ok := r.kids[n.more-1][l]; ok {
			return c
		}
	}
	return noNode
}

// addChild links node c (not yet a child) under ni.
func (r *Radix) addChild(ni, c uint32) {
	n := r.at(ni)
	if n.first == noNode {
		n.first, n.firstp = c, r.at(c)
		return
	}
	if n.more == 0 {
		if k := len(r.freeK); k > 0 {
			n.more = r.freeK[k-1] + 1
			r.freeK = r.freeK[:k-1]
		} else {
			r.kids = append(r.kids, make(map[uint64]uint32, 1))
			n.more = uint32(len(r.kids))
		}
	}
	r.kids[n.more-1][r.at(c).local] = c
	r.children++
}

// delChild unlinks child c of n.
func (r *Radix) delChild(n *rnode, c uint32) {
	if n.first == c {
		n.first, n.firstp = noNode, nil
		if n.more == 0 {
			return
		}
		// Promote one map entry so that child() stays correct.
		for l, m := range r.kids[n.more-1] {
			n.first, n.firstp = m, r.at(m)
			delete(r.kids[n.more-1], l)
			break
		}
	} else {
		delete(r.kids[n.more-1], r.at(c).local)
	}
	r.children--
	if m := r.kids[n.more-1]; len(m) == 0 {
		// Keep the (cleared) map for reuse: a fresh one costs an
		// allocation per branch.
		r.freeK = append(r.freeK, n.more-1)
		n.more = 0
	}
}

func (r *Radix) numChildren(n *rnode) int {
	if n.first == noNode {
		return 0
	}
	if n.more == 0 {
		return 1
	}
	return 1 + len(r.kids[n.more-1])
}

// eachChild calls fn for every child of n until it returns false.
func (r *Radix) eachChild(n *rnode, fn func(uint32) bool) {
	if n.first == noNode || !fn(n.first) || n.more == 0 {
		return
	}
	for _, c := range r.kids[n.more-1] {
		if !fn(c) {
			return
		}
	}
}

// members returns n's members, sorted by slot; the slice aliases the
// node's storage and is valid until n changes.
func (r *Radix) members(n *rnode) []rmember {
	switch n.n {
	case 0:
		return nil
	case 1:
		return unsafe.Slice(&n.one, 1)
	}
	return r.sets[n.set]
}

func (r *Radix) find(n *rnode, slot uint32) (int, bool) {
	if n.n == 1 {
		if slot > n.one.slot {
			return 1, false
		}
		return 0, n.one.slot == slot
	}
	return slices.BinarySearchFunc(r.members(n), slot, func(m rmember, s uint32) int { return cmp.Compare(m.slot, s) })
}

// addMember inserts m (not yet a member) into n at sorted index i.
func (r *Radix) addMember(n *rnode, i int, m rmember) {
	switch n.n {
	case 0:
		n.one = m
	case 1:
		var si uint32
		if k := len(r.freeS); k > 0 {
			si = r.freeS[k-1]
			r.freeS = r.freeS[:k-1]
		} else {
			si = uint32(len(r.sets))
			r.sets = append(r.sets, nil)
		}
		s := r.sets[si]
		oldCap := cap(s)
		s = slices.Insert(append(s[:0], n.one), i, m)
		r.memberCap += cap(s) - oldCap
		r.sets[si] = s
		n.set, n.one = si, rmember{}
	default:
		s := r.sets[n.set]
		oldCap := cap(s)
		s = slices.Insert(s, i, m)
		r.memberCap += cap(s) - oldCap
		r.sets[n.set] = s
	}
	n.n++
}

// delMember removes the member at index i of n.
func (r *Radix) delMember(n *rnode, i int) {
	switch n.n {
	case 1:
		n.one = rmember{}
	case 2:
		s := r.sets[n.set]
		n.one = s[1-i]
		r.sets[n.set] = s[:0]
		r.freeS = append(r.freeS, n.set)
		n.set = 0
	default:
		r.sets[n.set] = slices.Delete(r.sets[n.set], i, i+1)
	}
	n.n--
}

// Apply implements Index.
func (r *Radix) Apply(ev *kvevents.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.apply(ev)
}

// applyBatch applies evs under one write lock (Concurrent's writers).
func (r *Radix) applyBatch(evs []kvevents.Event, errs []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range evs {
		errs[i] = r.apply(&evs[i])
	}
}

// apply is Apply with the write lock held.
func (r *Radix) apply(ev *kvevents.Event) error { return r.counters.applyEvent(r, ev) }

// clearWorker drops everything worker+rank w holds (a Cleared event).
func (r *Radix) clearWorker(w kvevents.Worker) {
	if slot, ok := r.slots.lookup(w); ok {
		r.clear(slot)
	}
}

func (r *Radix) store(ev *kvevents.Event) error {
	w := ev.Worker()
	slot, ok := r.slots.lookup(w)
	var table *htable
	if ok {
		table = r.tables[slot]
	}
	if err := checkSelfParent(ev); err != nil {
		return err
	}
	cur, err := r.anchor(ev, table, slot)
	if err != nil {
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
		table = newHtable(r.hint)
		r.tables[slot] = table
	}
	for _, b := range ev.Blocks {
		if n, ok := table.get(b.Hash); ok {
			cur = n
			continue
		}
		c := r.child(r.at(cur), b.Local)
		if c == noNode {
			c = r.newNode(b.Local, cur, r.at(cur).depth+1)
			r.addChild(cur, c)
		}
		cn := r.at(c)
		i, held := r.find(cn, slot)
		if held {
			cur = c
			continue
		}
		r.addMember(cn, i, rmember{slot: slot, hash: b.Hash})
		if cur != rootNode {
			p := r.at(cur)
			j, _ := r.find(p, slot)
			r.members(p)[j].kids++
		}
		table.put(b.Hash, c)
		r.blocks++
		cur = c
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
		if n, ok := table.get(h); ok {
			todo = append(todo, rremove{n, h})
		}
	}
	// Deepest first: evicting a whole chain in one event then removes
	// leaves only and counts nothing as unknown.
	slices.SortStableFunc(todo, func(a, b rremove) int { return cmp.Compare(r.at(b.n).depth, r.at(a.n).depth) })
	r.unknown += uint64(len(ev.Hashes) - len(todo))
	for _, x := range todo {
		if n, ok := table.get(x.hash); !ok || n != x.n {
			r.unknown++ // listed twice, or already dropped with an ancestor
			continue
		}
		r.removeSubtree(slot, table, x.n)
	}
	r.scratch = todo[:0]
	if table.len() == 0 {
		r.freeSlot(slot)
	}
}

// removeSubtree drops slot from node ni and every descendant it holds.
func (r *Radix) removeSubtree(slot uint32, table *htable, ni uint32) {
	n := r.at(ni)
	i, _ := r.find(n, slot)
	if kids := r.members(n)[i].kids; kids > 0 {
		held := make([]uint32, 0, kids)
		r.eachChild(n, func(c uint32) bool {
			if _, ok := r.find(r.at(c), slot); ok {
				held = append(held, c)
			}
			return len(held) < int(kids)
		})
		for _, c := range held {
			r.removeSubtree(slot, table, c)
		}
		i, _ = r.find(n, slot)
	}
	table.del(r.members(n)[i].hash)
	r.delMember(n, i)
	r.blocks--
	if n.parent != rootNode {
		p := r.at(n.parent)
		j, _ := r.find(p, slot)
		r.members(p)[j].kids--
	}
	if n.n == 0 {
		r.detach(ni)
	}
}

// detach unlinks and frees a node that no worker holds (and so has no
// children).
func (r *Radix) detach(ni uint32) {
	n := r.at(ni)
	if invariants.Enabled && r.numChildren(n) != 0 {
		panic("indexer: detaching a radix node with children")
	}
	r.delChild(r.at(n.parent), ni)
	r.freeNode(ni)
}

func (r *Radix) clear(slot uint32) {
	table := r.tables[slot]
	for _, ni := range table.all() {
		n := r.at(ni)
		i, _ := r.find(n, slot)
		r.delMember(n, i)
	}
	r.blocks -= table.len()
	for _, ni := range table.all() {
		// Children of an emptied node are emptied too (prefix closure);
		// detach them before their parent so detach's check holds.
		r.detachEmpty(ni)
	}
	r.freeSlot(slot)
}

func (r *Radix) detachEmpty(ni uint32) {
	n := r.at(ni)
	if n.depth < 0 || n.n != 0 {
		return // the root, a freed node, or still held
	}
	var kids []uint32
	r.eachChild(n, func(c uint32) bool { kids = append(kids, c); return true })
	for _, c := range kids {
		r.detachEmpty(c)
	}
	r.detach(ni)
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
	ci := r.child(r.at(rootNode), locals[0])
	if ci == noNode {
		return dst
	}
	cur := r.at(ci)
	// dst[base+i] is the overlap of s0[i] (see Flash.AppendMatches).
	base := len(dst)
	s0 := r.members(cur)
	for _, m := range s0 {
		dst = append(dst, Overlap{Worker: r.slots.names[m.slot], Blocks: -1})
	}
	out := dst[base:]
	var aliveBuf [aliveStack]uint32
	alive, pooled := initAlive(&aliveBuf, len(s0))
	defer putAlive(pooled)
	// The walk is a chain of dependent loads: walkFirst follows first
	// children with unchanged worker sets without spilling anything on the
	// chain to the stack (written inline here, the compiler spilled the
	// child index and depth=1024 lookups were ~1.5x slower than with
	// pointer nodes); step takes the rest.
	depth := 1
	for depth < len(locals) {
		cur, depth = walkFirst(cur, locals, depth)
		if depth == len(locals) || cur.first == noNode {
			break
		}
		var next *rnode
		next, alive = r.step(out, alive, cur, r.at(cur.first), locals[depth], depth)
		if next == nil {
			break
		}
		cur = next
		depth++
	}
	for i := range out {
		if out[i].Blocks < 0 {
			out[i].Blocks = depth
		}
	}
	if !r.slots.ordered {
		sortOverlaps(out)
	}
	return dst
}

// walkFirst follows first children from cur (at query position depth-1)
// while their local hash matches the query's and the worker count is
// unchanged, and returns where it stopped. It is not inlined: on its own it
// keeps the whole chain in registers.
//
//go:noinline
func walkFirst(cur *rnode, locals []uint64, depth int) (*rnode, int) {
	for depth < len(locals) {
		next := cur.firstp
		if next == nil {
			break
		}
		if next.local != locals[depth] || next.n != cur.n {
			break
		}
		cur = next
		depth++
	}
	return cur, depth
}

// step is AppendMatches' slow path from cur at query position depth-1:
// find the child with local l when it is not cur's first (next), then mark
// the workers lost on the way (updating alive). It returns a nil node when
// there is no such child.
func (r *Radix) step(out Overlaps, alive []uint32, cur, next *rnode, l uint64, depth int) (*rnode, []uint32) {
	if next.local != l {
		ni := r.child(cur, l)
		if ni == noNode {
			return nil, alive
		}
		next = r.at(ni)
	}
	if next.n != cur.n {
		alive = markLostR(out, alive, r.members(cur), r.members(next), depth)
	}
	return next, alive
}

// markLostR sets out[alive[i]].Blocks = depth for each member a[i] missing
// from b (b ⊆ a, both sorted by slot; alive[i] is the out index of a[i])
// and returns alive compacted in place to align with b. Cost O(|a|) when
// many are lost, O(lost · log |a|) plus a memmove when few are. (Walking
// all of out per drop instead, as before, made this 44% of a 64-block
// lookup over 64 workers and O(W) per drop point.)
//
// NB: a copy of Flash's markLost over rmember. A generic version shared by
// both (a member constraint with a slot method) measured 2–3x slower
// FindMatches (64 blocks/64 workers: 0.60 -> 1.39 µs), the method calls going
// through the generic dictionary, so the hot loop stays duplicated.
func markLostR(out Overlaps, alive []uint32, a, b []rmember, depth int) []uint32 {
	lost := len(a) - len(b)
	if lost == 0 {
		return alive
	}
	if 2*lost*bits.Len(uint(len(a))) > len(a) {
		j, w := 0, 0
		for i, m := range a {
			if j < len(b) && b[j].slot == m.slot {
				alive[w] = alive[i]
				w++
				j++
				continue
			}
			out[alive[i]].Blocks = depth
			if lost--; lost == 0 {
				w += copy(alive[w:], alive[i+1:])
				break
			}
		}
		return alive[:w]
	}
	// Few lost: find each by binary search on the offset between a and b
	// (d members of a lost so far: a[k] pairs with b[k-d]).
	d, i, w, start := 0, 0, 0, 0
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
		out[alive[lo]].Blocks = depth
		w += copy(alive[w:], alive[start:lo])
		start = lo + 1
		d++
		i = lo + 1
	}
	w += copy(alive[w:], alive[start:])
	return alive[:w]
}

// Dump implements Index.
func (r *Radix) Dump() []kvevents.Event {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []kvevents.Event
	for _, slot := range r.slots.sorted() {
		table := r.tables[slot]
		blocks := make([]dumpBlock, 0, table.len())
		for h, ni := range table.all() {
			n := r.at(ni)
			b := dumpBlock{hash: h, local: n.local}
			if n.parent != rootNode {
				p := r.at(n.parent)
				i, _ := r.find(p, slot)
				b.hasParent, b.parent = true, r.members(p)[i].hash
			}
			blocks = append(blocks, b)
		}
		out = dumpWorker(out, r.slots.names[slot], blocks)
	}
	return out
}

// Stats implements Index. Bytes counts the node chunks (allocated, used or
// free), member slices (by capacity), children maps and per-worker tables,
// with maps estimated by mapBytes.
func (r *Radix) Stats() Stats {
	r.mu.RLock()
	defer r.mu.RUnlock()
	bytes := int64(len(r.chunks))*int64(unsafe.Sizeof([rchunkSize]rnode{})) +
		int64(r.memberCap)*int64(unsafe.Sizeof(rmember{})) +
		int64(cap(r.sets))*int64(unsafe.Sizeof([]rmember{})) +
		int64(len(r.kids))*200 + mapBytes(r.children, 16) +
		r.tableBytes() +
		int64(len(r.tables))*int64(ptrSize+unsafe.Sizeof(kvevents.Worker{}))
	return Stats{
		Blocks: r.blocks, Nodes: r.nodes, Workers: len(r.slots.ids), Bytes: bytes,
		Applied: r.counters.applied, Rejected: r.counters.rejected, UnknownRemove: r.unknown,
	}
}

func (r *Radix) maybeCheck() {
	if invariants.Enabled && r.blocks <= invariantsLimit {
		if err := r.check(); err != nil {
			panic(err)
		}
	}
}

// tableBytes is the memory of the per-worker tables.
func (r *Radix) tableBytes() int64 {
	var n int64
	for _, t := range r.tables {
		if t != nil {
			n += t.bytes() + int64(unsafe.Sizeof(*t))
		}
	}
	return n
}
