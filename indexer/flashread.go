package indexer

import (
	"math/bits"
	"slices"
	"sync/atomic"
)

// Flash's lookups. They take no lock (flashrcu.go): each entry's member
// set is read once, atomically, as a snapshot, and the walk keeps its own
// copy of the slots still matching (aslots), so that sets read at
// different instants can never misalign it.
//
// A lookup that overlaps no write (Flash.writing even and unchanged from
// start to end) saw one state, and its result is exact: the same as under
// a lock. One that overlaps writes runs in safe mode: it checks set
// equality where the exact walk infers it from sizes (O(W) per stride),
// and intersects sets by merge. Its result is then built from snapshots
// of the entries it crossed, each taken at some instant during the
// lookup; a worker whose blocks did not change meanwhile gets its exact
// overlap, and one stored or evicted meanwhile gets an overlap it had at
// one of those instants (stores add blocks parent-first and removals drop
// them leaf-first, so its overlap moves by one block at a time and passes
// through every value between two observations). A worker cleared
// meanwhile (Cleared, RemoveWorker) is the exception: clear drops its
// blocks in table order, so the walk may see an interior block gone and a
// deeper one still held; its overlap is then one between its values before
// and after the clear, not necessarily one it had
// (TestFlashLookupsBetweenBeforeAndAfter checks these bounds).

// reader is one lookup's access to Flash's arrays.
type reader struct {
	f *Flash
	v *fview
}

// at returns entry i; the view is refreshed when i is beyond it (the
// entry is newer than the view, so the current view has it).
func (r *reader) at(i uint32) *fentry {
	c := int(i >> fchunkShift)
	if c >= len(r.v.chunks) {
		r.v = r.f.view.Load()
	}
	return &r.v.chunks[c].e[i&(fchunkSize-1)]
}

// isRoot reports whether entry i (read through at) is at position 0.
func (r *reader) isRoot(i uint32) bool {
	return r.v.chunks[i>>fchunkShift].parent[i&(fchunkSize-1)] == noEntry
}

// index returns the index of the entry with id seq and the entry,
// (noEntry, nil) when there is none. It returns both so that a probe
// computes the entry's address once (see window.get).
func (r *reader) index(seq uint64) (uint32, *fentry) {
	return r.indexAt(seq, pHome(seq, len(r.v.ids)), len(r.v.ids))
}

// indexAt is index given seq's home slot in a table of n slots (any n
// when home is unknown: the view's table has another size then, and the
// home is computed here).
func (r *reader) indexAt(seq, home uint64, n int) (uint32, *fentry) {
	ids := r.v.ids
	if len(ids) == 0 {
		return noEntry, nil
	}
	if n != len(ids) {
		home = pHome(seq, len(ids))
	}
	tag := ptag(seq)
	for i := home; ; i = pNext(i, len(ids)) {
		s := atomic.LoadUint64(&ids[i])
		if s == 0 {
			return noEntry, nil
		}
		if s&^0xffffffff == tag && uint32(s) != 0 {
			i := uint32(s) - 1
			if e := r.at(i); e.seq == seq {
				return i, e
			}
		}
	}
}

// A member-set snapshot is the entry's mem word as one atomic load read
// it (flashmembers.go; 0 for no entry), resolved against the
// arena of the reader's view when its slots are needed. Blocks are never
// changed in place and not reused while the lookup runs, and every newer
// arena holds an older one's blocks, so the newest view resolves every
// snapshot of the lookup; an exact-mode lookup resolves against its
// first view, and if that was stale a write overlapped it and it is redone
// in safe mode.

// mset is a resolved snapshot, sorted by slot. Only the slot fields of
// blk may be read: writers update child counts in place.
type mset struct {
	blk []fmember // n >= 2
	one uint32    // the slot when n == 1
	n   int
}

func (s *mset) slot(i int) uint32 {
	if s.n == 1 {
		return s.one
	}
	return s.blk[i].slot
}

// resolve returns the members of snapshot m. Safe mode loads the newest
// view (see above); exact mode only when m is beyond the view's arena.
func (r *reader) resolve(m uint64, safe bool) mset {
	n, x := memN(m), uint32(m)
	if n < 2 {
		return mset{one: x, n: int(n)}
	}
	if safe || int(x+n) > len(r.v.arena) {
		r.v = r.f.view.Load()
	}
	return mset{blk: r.v.arena[x : x+n : x+n], n: int(n)}
}

func memCount(m uint64) int { return int(memN(m)) }

// name returns slot's worker (the view must be newer than the set that
// holds slot).
func (r *reader) name(slot uint32) Overlap {
	return Overlap{Worker: r.v.names[slot], Blocks: -1}
}

// FindMatches implements Index.
func (f *Flash) FindMatches(locals []uint64) Overlaps { return f.AppendMatches(nil, locals) }

// window holds the query's prefix ids and member-set snapshots over one
// stride and, in the first stride, the ids' home slots.
type window struct {
	base  int // query position of seqs[0]
	seqs  []uint64
	sets  []uint64 // snapshots of the positions probed
	homes []uint64 // pHome(seqs[k], size), when size is not -1
	size  int
}

// get probes position pos and keeps its snapshot. A stride's bisection
// probes each position at most once (q, then midpoints of disjoint
// intervals), so nothing is looked up in sets first: marking a stride's
// positions unread before, a store each, was all the cache cost.
func (w *window) get(r *reader, pos int) uint64 {
	k := pos - w.base
	var m uint64
	if _, e := r.indexAt(w.seqs[k], w.homes[k], w.size); e != nil {
		m = atomic.LoadUint64(&e.mem)
	}
	w.sets[k] = m
	return m
}

const stackStride = 128

// AppendMatches appends the FindMatches result to dst and returns it. It
// takes no lock and does not allocate when dst has room and the stride is
// at most 128.
func (f *Flash) AppendMatches(dst Overlaps, locals []uint64) Overlaps {
	return f.appendMatches(dst, locals, nil)
}

// AppendMatchesIDs implements IDMatchAppender: AppendMatches reading the
// query's prefix ids from ids (kvhash.AppendPrefixIDs of locals) instead
// of computing them. ids of another length than locals are ignored.
func (f *Flash) AppendMatchesIDs(dst Overlaps, locals, ids []uint64) Overlaps {
	if len(ids) != len(locals) {
		ids = nil
	}
	return f.appendMatches(dst, locals, ids)
}

// WantsIDs implements IDMatchAppender: Flash uses the ids.
func (f *Flash) WantsIDs() bool { return true }

// appendMatches is AppendMatches with the query's prefix ids (nil:
// computed here).
func (f *Flash) appendMatches(dst Overlaps, locals, ids []uint64) Overlaps {
	if len(locals) == 0 {
		return dst
	}
	ep := f.enterRead()
	defer f.exitRead(ep)
	w0 := f.writing.Load()
	safe := w0&1 != 0
	if safe {
		f.reads.started.Add(1)
	}
	base := len(dst)
	dst = f.match(dst, locals, ids, safe)
	if !safe && f.writing.Load() != w0 {
		f.reads.redone.Add(1)
		dst = f.match(dst[:base], locals, ids, true)
	}
	return dst
}

// readCounters count the lookups that ran in safe mode (Stats). Only that
// path touches them, so exact lookups on every core share no written
// cache line; the padding keeps them off the writers' fields.
type readCounters struct {
	_       [64]byte
	started atomic.Uint64 // a writer held the lock when the lookup began
	redone  atomic.Uint64 // began exact, overlapped a write, redone safe
	_       [64]byte
}

// match is AppendMatches within a read section; ids, when not nil, are
// the query's prefix ids.
func (f *Flash) match(dst Overlaps, locals, ids []uint64, safe bool) Overlaps {
	r := reader{f: f, v: f.view.Load()}
	ci, cur := r.index(locals[0])
	if ci == noEntry || !r.isRoot(ci) {
		return dst
	}
	m0 := atomic.LoadUint64(&cur.mem)
	// The names must come from a view at least as new as m0 (and s0 from
	// an arena as new): a slot recycled and acquired by another worker is
	// published before any set that holds it.
	r.v = f.view.Load()
	s0 := r.resolve(m0, false)
	// out[alive[i]] is the overlap of s0's i-th member: at its place in
	// worker order where the view's ranks give it (placeByRank), so the
	// result needs no reordering at the end; else at i, in slot order,
	// which is usually worker order, so the final sort is a linear check.
	base := len(dst)
	ordered, rank := r.v.ordered, r.v.rank
	sc := matchPool.Get().(*matchScratch)
	defer matchPool.Put(sc)
	alive, aslots, pooled := initAlive2(&sc.alive, s0.n)
	defer putAlive(pooled)
	placed := !ordered && placeByRank(alive, &s0, rank, &sc.rank)
	dst = slices.Grow(dst, s0.n)[:base+s0.n]
	out := dst[base:]
	for i := range aslots {
		aslots[i] = s0.slot(i)
		out[alive[i]] = r.name(aslots[i])
	}
	win := window{seqs: sc.seqs[:], sets: sc.sets[:], homes: sc.homes[:]}
	own := win.seqs // the window's ids when not given

	drops := sc.drops[:] // window offsets (bisectExact)
	if f.stride > stackStride {
		own = make([]uint64, f.stride+1)
		win = window{seqs: own, sets: make([]uint64, f.stride+1), homes: make([]uint64, f.stride+1)}
		drops = make([]int32, f.stride)
	}
	p, D := 0, len(locals)
	curSeq, curSet := cur.seq, m0
	live, holes := len(aslots), false // workers still matching; aslots has holes
	pos := &sc.pos                    // markDrops's, filled at the first drop
	posSet := false
	for p < D-1 {
		q := min(p+f.stride, D-1)
		// Window covers positions p..q; seqs[0] is cur's.
		win.base = p
		win.sets[0] = curSet
		// The first window's id slots are prefetched (see prefetchSlots),
		// their homes computed once for that and for the probes.
		first, tbl := p == 0, r.v.ids
		win.size = -1
		homes := win.homes[1 : q-p+1]
		if first {
			win.size = len(tbl)
		}
		if ids != nil {
			win.seqs = ids[p : q+1] // ids[p] is curSeq
			if first {
				for k, s := range win.seqs[1:] {
					homes[k] = pHome(s, len(tbl))
				}
			}
		} else {
			win.seqs = own
			win.seqs[0] = curSeq
			s, seqs := curSeq, win.seqs[1:q-p+1]
			if first {
				// In the prefix-id chain's shadow: its next step waits
				// for this one's multiply.
				for k, l := range locals[p+1 : q+1] {
					s = prefixID(s, l)
					seqs[k] = s
					homes[k] = pHome(s, len(tbl))
				}
			} else {
				for k, l := range locals[p+1 : q+1] {
					s = prefixID(s, l)
					seqs[k] = s
				}
			}
		}
		if first && len(tbl) > 0 {
			prefetchSlots(&tbl[0], &homes[0], len(homes))
		}
		next := win.get(&r, q)
		if safe && !r.dropped(aslots, next, true) || !safe && memCount(next) == live {
			curSeq, curSet, p = win.seqs[q-p], next, q
			continue
		}
		if safe {
			alive, aslots = r.bisectSafe(out, alive, aslots, &win, p, q, next)
			live = len(aslots)
		} else {
			// Exact: sets shrink with depth, so the counts tell (dropped),
			// and aslots may keep holes (markDrops).
			d := r.bisectExact(&win, p, q, live, next, drops[:0])
			if !posSet {
				pos.fill(aslots)
				posSet = true
			}
			alive, aslots, live, holes = r.markDrops(out, alive, aslots, live, holes, pos, &win, d)
		}
		// Every worker has its overlap once none still matches; in safe
		// mode next may hold workers stored during the lookup, which must
		// not send the walk bisecting the rest of the query.
		if live == 0 || memCount(next) == 0 {
			finishOrder(out, &s0, rank, ordered, placed)
			return dst
		}
		curSeq, curSet, p = win.seqs[q-p], next, q
	}
	for i := range out {
		if out[i].Blocks < 0 {
			out[i].Blocks = p + 1
		}
	}
	finishOrder(out, &s0, rank, ordered, placed)
	return dst
}

// initAlive2 is initAlive with room for the slots beside: alive = [0, n),
// aslots of length n.
func initAlive2(stack *[2 * aliveStack]uint32, n int) (alive, aslots []uint32, pooled *[]uint32) {
	buf := stack[:]
	if n > aliveStack {
		pooled = alivePool.Get().(*[]uint32)
		if cap(*pooled) < 2*n {
			*pooled = make([]uint32, 2*n)
		}
		buf = (*pooled)[:2*n]
	}
	alive, aslots = buf[:n:n], buf[n:2*n:2*n]
	for i := range alive {
		alive[i] = uint32(i)
	}
	return alive, aslots, pooled
}

// dropped reports whether a worker of aslots (still matching at some
// position) is missing from snapshot m (the set at a later one). Exact:
// m is a subset, so sizes tell; safe: compare.
func (r *reader) dropped(aslots []uint32, m uint64, safe bool) bool {
	if memCount(m) != len(aslots) {
		return true
	}
	if !safe {
		return false
	}
	b := r.resolve(m, true)
	if b.n < 2 {
		return b.n == 1 && b.one != aslots[0]
	}
	for i := range b.blk {
		if b.blk[i].slot != aslots[i] {
			return true
		}
	}
	return false
}

// bisectSafe sets, for every worker of aslots (matching at query position
// lo) missing from shi (the set at hi > lo), its overlap: the first
// position it lacks. Safe mode only: exact lookups record the drops with
// bisectExact and mark them with markDrops (flashbatch.go).
func (r *reader) bisectSafe(out Overlaps, alive, aslots []uint32, win *window, lo, hi int, shi uint64) ([]uint32, []uint32) {
	if !r.dropped(aslots, shi, true) {
		return alive, aslots
	}
	if hi == lo+1 {
		return markLost(out, alive, aslots, r.resolve(shi, true), hi, true)
	}
	mid := lo + (hi-lo)/2
	smid := win.get(r, mid)
	alive, aslots = r.bisectSafe(out, alive, aslots, win, lo, mid, smid)
	return r.bisectSafe(out, alive, aslots, win, mid, hi, shi)
}

// markLost sets out[alive[i]].Blocks = depth for each slot aslots[i]
// missing from b (both sorted by slot; alive[i] is the out index of
// aslots[i]) and returns alive and aslots compacted in place to the
// workers b keeps. Exact mode (b ⊆ aslots): O(|a|) when many are lost,
// O(lost · log |a|) plus a memmove when few are. (Walking all of out per
// drop instead, as before, made this 44% of a 64-block lookup over 64
// workers and O(W) per drop point.) Safe mode: a merge, O(|a| + |b|).
func markLost(out Overlaps, alive, aslots []uint32, b mset, depth int, safe bool) ([]uint32, []uint32) {
	if b.n < 2 {
		w := 0
		for i, s := range aslots {
			if b.n == 1 && s == b.one {
				alive[w], aslots[w] = alive[i], s
				w++
				continue
			}
			out[alive[i]].Blocks = depth
		}
		return alive[:w], aslots[:w]
	}
	blk := b.blk
	lost := len(aslots) - len(blk)
	if safe {
		j, w := 0, 0
		for i, s := range aslots {
			for j < len(blk) && blk[j].slot < s {
				j++
			}
			if j < len(blk) && blk[j].slot == s {
				alive[w], aslots[w] = alive[i], s
				w++
				j++
				continue
			}
			out[alive[i]].Blocks = depth
		}
		return alive[:w], aslots[:w]
	}
	if lost <= 0 {
		return alive, aslots
	}
	if 2*lost*bits.Len(uint(len(aslots))) > len(aslots) {
		j, w := 0, 0
		for i, s := range aslots {
			if j < len(blk) && blk[j].slot == s {
				alive[w], aslots[w] = alive[i], s
				w++
				j++
				continue
			}
			out[alive[i]].Blocks = depth
			if lost--; lost == 0 {
				copy(aslots[w:], aslots[i+1:])
				w += copy(alive[w:], alive[i+1:])
				break
			}
		}
		return alive[:w], aslots[:w]
	}
	// Few lost: find each by binary search on the offset between a and b
	// (d members of a lost so far: a[k] pairs with b[k-d]).
	d, i, w, start := 0, 0, 0, 0
	for len(aslots)-i > len(blk)-(i-d) {
		lo, hi := i, len(blk)+d
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if aslots[m] != blk[m-d].slot {
				hi = m
			} else {
				lo = m + 1
			}
		}
		out[alive[lo]].Blocks = depth
		copy(aslots[w:], aslots[start:lo])
		w += copy(alive[w:], alive[start:lo])
		start = lo + 1
		d++
		i = lo + 1
	}
	copy(aslots[w:], aslots[start:])
	w += copy(alive[w:], alive[start:])
	return alive[:w], aslots[:w]
}
