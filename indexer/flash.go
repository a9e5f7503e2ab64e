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
	"github.com/kvrouter/kvrouter/kvhash"
)

// Flash is the positional index of DESIGN.md §3 with jump search.
//
// Every distinct prefix is one entry, keyed by the router-side sequence hash
// of its local hashes (seq[0] = local[0], seq[i] = kvhash.SeqNext(seq[i-1],
// local[i])), which the index computes at store time from the parent
// entry's. The key thus encodes position, local hash and the whole prefix:
// one map probe finds "the block at position p with exactly this prefix",
// so two prefixes that share a local hash at the same position are
// different entries and matching is exact (up to 64-bit hash collisions).
// An entry records its position, parent, local hash and the sorted slots of
// the workers holding it. Each worker has a reverse table engine hash ->
// entry.
//
// Jump search: a worker's entries are prefix-closed (Removed drops
// descendants too), so the worker set at query position q is a subset of
// the set at p < q. FindMatches starts at position 0 and probes p+J; an
// unchanged count confirms the whole stride; otherwise it bisects the
// stride by set size to find where each lost worker dropped out. Sequence
// hashes of the query are computed incrementally and only up to the last
// stride needed. Cost: O(D) cheap hashing, O(D/J) map probes, plus
// O(log J) probes and O(log W) per drop.
//
// Flash is safe for concurrent use (one RWMutex: FindMatches reads, Apply
// writes).
type Flash struct {
	mu     sync.RWMutex
	stride int
	m      map[uint64]*fentry
	slots  slotTable
	tables []map[uint64]*fentry // slot -> engine hash -> entry

	blocks    int
	memberCap int
	applied   uint64
	rejected  uint64
	unknown   uint64
}

type fentry struct {
	seq     uint64
	local   uint64
	parent  *fentry
	pos     uint32
	members []fmember // sorted by slot
}

// fmember is one worker holding an entry and the number of the entry's
// children it holds (0 = leaf for this worker: removal is O(log W)).
type fmember struct {
	slot uint32
	kids uint32
}

var _ Index = (*Flash)(nil)

// NewFlash returns an empty flash index with jump stride cfg.Stride
// (default 64).
func NewFlash(cfg Config) *Flash {
	cfg = cfg.withDefaults()
	return &Flash{stride: cfg.Stride, m: make(map[uint64]*fentry)}
}

func (e *fentry) find(slot uint32) (int, bool) {
	return slices.BinarySearchFunc(e.members, slot, func(m fmember, s uint32) int { return cmp.Compare(m.slot, s) })
}

func (e *fentry) size() int {
	if e == nil {
		return 0
	}
	return len(e.members)
}

// Apply implements Index.
func (f *Flash) Apply(ev *kvevents.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	switch ev.Kind {
	case kvevents.KindStored:
		err = f.store(ev)
	case kvevents.KindRemoved:
		f.remove(ev)
	case kvevents.KindCleared:
		if slot, ok := f.slots.lookup(ev.Worker()); ok {
			f.clear(slot)
		}
	default:
		err = fmt.Errorf("kind %d: %w", ev.Kind, ErrBadEvent)
	}
	if err != nil {
		f.rejected++
		return wrapApply(ev, err)
	}
	f.applied++
	f.maybeCheck()
	return nil
}

func (f *Flash) store(ev *kvevents.Event) error {
	w := ev.Worker()
	slot, ok := f.slots.lookup(w)
	var table map[uint64]*fentry
	if ok {
		table = f.tables[slot]
	}
	if err := validateStore(ev, func(h uint64) bool { _, ok := table[h]; return ok }); err != nil {
		return err
	}
	if len(ev.Blocks) == 0 {
		return nil
	}
	if !ok {
		slot = f.slots.acquire(w)
		for int(slot) >= len(f.tables) {
			f.tables = append(f.tables, nil)
		}
		table = make(map[uint64]*fentry, len(ev.Blocks))
		f.tables[slot] = table
	}
	var cur *fentry
	if ev.HasParent {
		cur = table[ev.Parent]
	}
	for _, b := range ev.Blocks {
		if e, ok := table[b.Hash]; ok {
			cur = e
			continue
		}
		seq, pos := b.Local, uint32(0)
		if cur != nil {
			seq, pos = kvhash.SeqNext(cur.seq, b.Local), cur.pos+1
		}
		e := f.m[seq]
		if e == nil {
			e = &fentry{seq: seq, local: b.Local, parent: cur, pos: pos}
			f.m[seq] = e
		}
		i, held := e.find(slot)
		if held {
			cur = e
			continue
		}
		oldCap := cap(e.members)
		e.members = slices.Insert(e.members, i, fmember{slot: slot})
		f.memberCap += cap(e.members) - oldCap
		if cur != nil {
			j, _ := cur.find(slot)
			cur.members[j].kids++
		}
		table[b.Hash] = e
		f.blocks++
		cur = e
	}
	return nil
}

func (f *Flash) remove(ev *kvevents.Event) {
	slot, ok := f.slots.lookup(ev.Worker())
	if !ok {
		f.unknown += uint64(len(ev.Hashes))
		return
	}
	table := f.tables[slot]
	// Deepest first (see Radix.remove). Events are mostly short and
	// already leaf-first, so check before sorting.
	hashes := ev.Hashes
	deepestFirst := slices.IsSortedFunc(hashes, func(a, b uint64) int {
		return cmp.Compare(posOr(table, b), posOr(table, a))
	})
	if !deepestFirst {
		hashes = slices.Clone(hashes)
		slices.SortStableFunc(hashes, func(a, b uint64) int {
			return cmp.Compare(posOr(table, b), posOr(table, a))
		})
	}
	for _, h := range hashes {
		e, ok := table[h]
		if !ok {
			f.unknown++
			continue
		}
		i, _ := e.find(slot)
		if e.members[i].kids > 0 {
			f.removeDescendants(slot, table, e)
		}
		f.removeLeaf(slot, table, h, e)
	}
	if len(table) == 0 {
		f.tables[slot] = nil
		f.slots.release(slot)
	}
}

// posOr is the position of a held hash, -1 when unknown.
func posOr(table map[uint64]*fentry, h uint64) int64 {
	if e, ok := table[h]; ok {
		return int64(e.pos)
	}
	return -1
}

// removeLeaf drops slot from e, which it holds under h and whose children
// it does not hold.
func (f *Flash) removeLeaf(slot uint32, table map[uint64]*fentry, h uint64, e *fentry) {
	i, _ := e.find(slot)
	e.members = slices.Delete(e.members, i, i+1)
	delete(table, h)
	f.blocks--
	if p := e.parent; p != nil {
		j, _ := p.find(slot)
		p.members[j].kids--
	}
	if len(e.members) == 0 {
		f.memberCap -= cap(e.members)
		delete(f.m, e.seq)
	}
}

// removeDescendants drops slot from every descendant of e it holds. Entries
// have no child links (that is what keeps them small), so this scans the
// worker's table; engines evict leaf-first, so it is rare.
func (f *Flash) removeDescendants(slot uint32, table map[uint64]*fentry, e *fentry) {
	type held struct {
		h uint64
		e *fentry
	}
	var cand []held
	for h, x := range table {
		if x.pos > e.pos {
			cand = append(cand, held{h, x})
		}
	}
	slices.SortFunc(cand, func(a, b held) int { return cmp.Compare(a.e.pos, b.e.pos) })
	doomed := map[*fentry]bool{e: true}
	var out []held
	for _, c := range cand {
		if doomed[c.e.parent] {
			doomed[c.e] = true
			out = append(out, c)
		}
	}
	for i := len(out) - 1; i >= 0; i-- {
		f.removeLeaf(slot, table, out[i].h, out[i].e)
	}
}

func (f *Flash) clear(slot uint32) {
	table := f.tables[slot]
	for _, e := range table {
		i, _ := e.find(slot)
		e.members = slices.Delete(e.members, i, i+1)
		if len(e.members) == 0 {
			f.memberCap -= cap(e.members)
			delete(f.m, e.seq)
		}
	}
	f.blocks -= len(table)
	f.tables[slot] = nil
	f.slots.release(slot)
}

// RemoveWorker implements Index.
func (f *Flash) RemoveWorker(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, slot := range f.slots.ranksOf(id) {
		f.clear(slot)
	}
	f.maybeCheck()
}

// FindMatches implements Index.
func (f *Flash) FindMatches(locals []uint64) Overlaps { return f.AppendMatches(nil, locals) }

// window caches the query's sequence hashes and entries over one stride.
type window struct {
	base int // query position of seqs[0]
	seqs []uint64
	ents []*fentry
	got  []bool
}

func (w *window) get(f *Flash, pos int) *fentry {
	k := pos - w.base
	if !w.got[k] {
		w.ents[k], w.got[k] = f.m[w.seqs[k]], true
	}
	return w.ents[k]
}

const stackStride = 128

// AppendMatches appends the FindMatches result to dst and returns it. It
// does not allocate when dst has room and the stride is at most 128.
func (f *Flash) AppendMatches(dst Overlaps, locals []uint64) Overlaps {
	if len(locals) == 0 {
		return dst
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	cur := f.m[locals[0]]
	if cur == nil || cur.pos != 0 {
		return dst
	}
	// dst[base+i] is the overlap of s0[i]; slots are in slot order, which
	// is usually worker order, so the final sort is a linear check.
	base := len(dst)
	s0 := cur.members
	for _, m := range s0 {
		dst = append(dst, Overlap{Worker: f.slots.names[m.slot], Blocks: -1})
	}
	out := dst[base:]
	var (
		seqBuf [stackStride + 1]uint64
		entBuf [stackStride + 1]*fentry
		gotBuf [stackStride + 1]bool
	)
	win := window{seqs: seqBuf[:], ents: entBuf[:], got: gotBuf[:]}
	if f.stride > stackStride {
		win = window{seqs: make([]uint64, f.stride+1), ents: make([]*fentry, f.stride+1), got: make([]bool, f.stride+1)}
	}
	p, D := 0, len(locals)
	for p < D-1 {
		q := min(p+f.stride, D-1)
		// Window covers positions p..q; seqs[0] is cur's.
		win.base = p
		win.seqs[0], win.ents[0], win.got[0] = cur.seq, cur, true
		s := cur.seq
		for k := p + 1; k <= q; k++ {
			s = kvhash.SeqNext(s, locals[k])
			win.seqs[k-p], win.got[k-p] = s, false
		}
		next := win.get(f, q)
		if next.size() == len(cur.members) {
			cur, p = next, q
			continue
		}
		f.bisect(out, s0, &win, p, cur, q, next)
		if next == nil {
			sortOverlaps(out)
			return dst
		}
		cur, p = next, q
	}
	for i := range out {
		if out[i].Blocks < 0 {
			out[i].Blocks = p + 1
		}
	}
	sortOverlaps(out)
	return dst
}

// bisect sets, for every worker of elo (at query position lo) missing from
// ehi (at hi > lo, a subset), its overlap: the first position it lacks.
func (f *Flash) bisect(out Overlaps, s0 []fmember, win *window, lo int, elo *fentry, hi int, ehi *fentry) {
	if elo.size() == ehi.size() {
		return
	}
	if hi == lo+1 {
		var b []fmember
		if ehi != nil {
			b = ehi.members
		}
		markLost(out, s0, elo.members, b, hi)
		return
	}
	mid := lo + (hi-lo)/2
	emid := win.get(f, mid)
	f.bisect(out, s0, win, lo, elo, mid, emid)
	f.bisect(out, s0, win, mid, emid, hi, ehi)
}

// markLost sets out[i].Blocks = depth for each member s0[i] in a \ b (b ⊆ a
// ⊆ s0, all sorted by slot). Each missing member is found by binary
// search: O(lost · log |a|).
func markLost(out Overlaps, s0, a, b []fmember, depth int) {
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
	d, i := 0, 0 // d members of a lost so far; a[k] pairs with b[k-d]
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
		j, _ := slices.BinarySearchFunc(s0, a[lo].slot, func(m fmember, s uint32) int { return cmp.Compare(m.slot, s) })
		out[j].Blocks = depth
		d++
		i = lo + 1
	}
}

// Dump implements Index.
func (f *Flash) Dump() []kvevents.Event {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []kvevents.Event
	for _, slot := range f.slots.sorted() {
		table := f.tables[slot]
		hashOf := make(map[*fentry]uint64, len(table))
		for h, e := range table {
			hashOf[e] = h
		}
		blocks := make([]dumpBlock, 0, len(table))
		for h, e := range table {
			b := dumpBlock{hash: h, local: e.local}
			if e.parent != nil {
				b.hasParent, b.parent = true, hashOf[e.parent]
			}
			blocks = append(blocks, b)
		}
		out = dumpWorker(out, f.slots.names[slot], blocks)
	}
	return out
}

// Stats implements Index. Bytes counts entries, member slices (by
// capacity), the entry map and the per-worker tables (maps estimated by
// mapBytes).
func (f *Flash) Stats() Stats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	bytes := int64(len(f.m))*roundAlloc(unsafe.Sizeof(fentry{})) +
		int64(f.memberCap)*int64(unsafe.Sizeof(fmember{})) +
		mapBytes(len(f.m), 8+ptrSize) +
		mapBytes(f.blocks, 8+ptrSize) +
		int64(len(f.tables))*int64(ptrSize+unsafe.Sizeof(kvevents.Worker{}))
	return Stats{
		Blocks: f.blocks, Nodes: len(f.m), Workers: len(f.slots.ids), Bytes: bytes,
		Applied: f.applied, Rejected: f.rejected, UnknownRemove: f.unknown,
	}
}

func (f *Flash) maybeCheck() {
	if invariants.Enabled && f.blocks <= invariantsLimit {
		if err := f.check(); err != nil {
			panic(err)
		}
	}
}

// Check verifies the entry map against the per-worker tables (forward and
// reverse maps agree, prefix closure, child counts). O(size).
func (f *Flash) Check() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.check()
}

func (f *Flash) check() error {
	blocks := 0
	kids := make(map[[2]uint64]int) // (parent seq, slot) -> held children
	for seq, e := range f.m {
		if e.seq != seq || len(e.members) == 0 {
			return fmt.Errorf("flash: entry %d bad key or empty", seq)
		}
		want := e.local
		if e.parent != nil {
			want = kvhash.SeqNext(e.parent.seq, e.local)
			if e.pos != e.parent.pos+1 || f.m[e.parent.seq] != e.parent {
				return fmt.Errorf("flash: entry %d badly linked", seq)
			}
		} else if e.pos != 0 {
			return fmt.Errorf("flash: root entry %d at pos %d", seq, e.pos)
		}
		if want != seq {
			return fmt.Errorf("flash: entry %d has wrong sequence hash", seq)
		}
		for i, m := range e.members {
			blocks++
			if i > 0 && e.members[i-1].slot >= m.slot {
				return fmt.Errorf("flash: entry %d members unsorted", seq)
			}
			if e.parent != nil {
				if _, ok := e.parent.find(m.slot); !ok {
					return fmt.Errorf("flash: entry %d slot %d not prefix-closed", seq, m.slot)
				}
				kids[[2]uint64{e.parent.seq, uint64(m.slot)}]++
			}
		}
	}
	tb := 0
	for slot, t := range f.tables {
		if t == nil {
			continue
		}
		if !f.slots.used[slot] || len(t) == 0 {
			return fmt.Errorf("flash: slot %d table inconsistent", slot)
		}
		for h, e := range t {
			tb++
			i, ok := e.find(uint32(slot))
			if !ok || f.m[e.seq] != e {
				return fmt.Errorf("flash: slot %d hash %d: entry does not list it", slot, h)
			}
			if got := kids[[2]uint64{e.seq, uint64(slot)}]; got != int(e.members[i].kids) {
				return fmt.Errorf("flash: slot %d hash %d kids %d want %d", slot, h, e.members[i].kids, got)
			}
		}
	}
	if blocks != f.blocks || tb != blocks {
		return fmt.Errorf("flash: counted blocks %d table %d, have %d", blocks, tb, f.blocks)
	}
	return nil
}
