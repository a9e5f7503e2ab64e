package indexer

import (
	"math"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/kvrouter/kvrouter/internal/invariants"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// Approx is the approximate prefix index for fleets without KV events
// (DESIGN.md §3, approximate mode): the router inserts each routed
// request's blocks for the chosen worker with an expiry of now + TTL
// (re-routing refreshes it). Lookups ignore expired blocks; expired blocks
// are deleted lazily by the next Insert. When more than MaxBlocks (worker,
// block) pairs are held, Insert prunes in expiry order down to
// PruneFraction of MaxBlocks.
//
// Blocks are keyed by the router sequence hash of their prefix, so matching
// has exact prefix semantics. Time is always passed in; Approx reads no
// clock. Expiry order is a queue of generations, one per Insert, in Insert
// order (approxgen.go): a pair belongs to the generation of the Insert
// that last set its expiry, and is dropped from its end (deepest block
// first within one Insert, so that pruning ties drop leaves first). A
// pair's expiry and generation live in its member only, so a refresh
// writes one place. The order is exact while the now values passed to
// Insert do not decrease (the normal case) and approximate otherwise.
//
// Steady-state Insert and lookups do not allocate: entries, their member
// slices and generations with their lists are reused from free lists.
//
// Approx is safe for concurrent use (one RWMutex).
type Approx struct {
	mu        sync.RWMutex
	ttl       int64
	maxBlocks int
	pruneTo   int

	m         *htable // sequence hash -> entries index
	entries   []aentry
	freeEntry []uint32 // unused entries (their member slices kept for reuse)
	slots     slotTable
	counts    []int // slot -> blocks held
	// gens[0] is the sentinel of the generation queue: its next is the
	// oldest Insert's, its prev the newest. Free generations chain through
	// next from freeGen (0: none).
	gens    []agen
	freeGen uint32
	blocks  int

	memberCap int
	listCap   int    // capacity of every generation's list
	compacted uint64 // stale items dropped by compaction (tests)
	refreshed uint64 // pairs refreshed by refreshRun (tests)
	expired   uint64
	pruned    uint64

	// Prefix closure (approxclosed.go): maxExp bounds every held pair's
	// expiry; low counts the held pairs expiring at or before chaos, the
	// maxExp of the last event that may have broken the closure.
	maxExp, chaos int64
	low           int
	// inversions counts the adjacent generations in the queue whose
	// expiries are out of order (approxgen.go): at 0 the head's expiry is
	// the earliest held, so a lookup before it sees every member alive
	// and need not read their expiries (allAliveAt).
	inversions int
	// order lists the used slots in worker order and pos is each slot's
	// place in it (-1: unused), rebuilt under the write lock when
	// orderStale (approxclosed.go).
	order      []uint32
	pos        []int32
	orderStale bool

	// last caches the entries of the blocks of recent Inserts, by
	// position in the prompt: consecutive prompts often share a prefix (a
	// system prompt, a conversation's history), whose blocks then need no
	// map probe. An item is used only if its entry still holds that block.
	last []lastEntry

	// noRefreshRun sends every block of insert through its general loop
	// (tests comparing it with refreshRun).
	noRefreshRun bool
}

type lastEntry struct {
	seq uint64
	ei  uint32
}

type aentry struct {
	seq     uint64
	members []amember // sorted by slot
}

type amember struct {
	slot uint32
	gen  uint32 // the generation holding it (the Insert that set exp)
	exp  int64  // unix nanoseconds
}

// ApproxStats is a snapshot of an Approx index.
type ApproxStats struct {
	Blocks  int    // (worker, block) pairs held, expired or not yet swept
	Nodes   int    // distinct prefixes
	Workers int    // worker+ranks holding blocks
	Bytes   int64  // approximate bytes in use
	Expired uint64 // pairs deleted because their TTL passed
	Pruned  uint64 // pairs deleted early by the size bound
}

// NewApprox returns an empty approximate index using cfg.TTL (default
// 120 s), cfg.MaxBlocks (default 2^20) and cfg.PruneFraction (default 0.8).
func NewApprox(cfg ApproxConfig) *Approx {
	cfg = cfg.withDefaults()
	return &Approx{
		ttl:       int64(cfg.TTL),
		maxBlocks: cfg.MaxBlocks,
		pruneTo:   int(float64(cfg.MaxBlocks) * cfg.PruneFraction),
		m:         newHtable(0),
		gens:      make([]agen, 1),
		maxExp:    math.MinInt64,
		chaos:     math.MinInt64,
	}
}

// find returns the index of slot's member, or where it would be inserted.
func (e *aentry) find(slot uint32) (int, bool) {
	if ms := e.members; len(ms) <= 8 {
		// Most blocks have a few holders: a scan beats the bisection.
		for i := range ms {
			if ms[i].slot >= slot {
				return i, ms[i].slot == slot
			}
		}
		return len(ms), false
	}
	ms := e.members
	// Many holders are often every slot up to some point (a prefix booked
	// on the whole fleet): then slot's member sits at index slot.
	if j := int(slot); j < len(ms) && ms[j].slot == slot {
		return j, true
	}
	// Bisection written out: slices.BinarySearchFunc calls its compare
	// function per step.
	lo, hi := 0, len(ms)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ms[m].slot < slot {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(ms) && ms[lo].slot == slot
}

// Insert records that worker w now holds the blocks of locals (a routed
// request's local hashes), expiring at now + TTL.
func (a *Approx) Insert(w kvevents.Worker, locals []uint64, now time.Time) {
	t := now.UnixNano()
	a.insert(w, locals, false, t, t+a.ttl, false)
}

// InsertSeq is Insert given the blocks' sequence hashes
// (kvhash.AppendSeq of the locals), which a router has already computed.
// Any chain that names each prefix works (the router's own side indexes
// get kvhash.AppendPrefixIDs) if one Approx is given one kind only: Insert
// and AppendMatches name blocks by sequence hash.
func (a *Approx) InsertSeq(w kvevents.Worker, seqs []uint64, now time.Time) {
	t := now.UnixNano()
	a.insert(w, seqs, true, t, t+a.ttl, false)
}

// insert is Insert at t (unix nanoseconds) of hs, which are sequence
// hashes if isSeq and local hashes otherwise, expiring at exp. With
// keepLater (InsertSeqBooked) a pair that expires after exp keeps its
// expiry, and the generation takes its place in the queue by expiry.
func (a *Approx) insert(w kvevents.Worker, hs []uint64, isSeq bool, t, exp int64, keepLater bool) {
	if len(hs) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(t, math.MaxInt, &a.expired)
	if a.blocks == 0 {
		a.maxExp = math.MinInt64
	}
	// An earlier expiry than one held (now went backwards) may leave a
	// block expiring before its descendants; not with keepLater, which
	// lowers no expiry (approxbooked.go).
	backwards := !keepLater && exp < a.maxExp
	a.maxExp = max(a.maxExp, exp)
	slot := a.slots.acquire(w)
	if !a.slotKnown(slot) {
		a.slotsChanged()
	}
	defer a.rebuildOrder() // before the unlock (defers run last first)
	for int(slot) >= len(a.counts) {
		a.counts = append(a.counts, 0)
	}
	// This Insert's pairs form a new generation at the queue's tail.
	g := a.newGen(exp, slot, len(hs), keepLater)
	gp := &a.gens[g] // a.gens does not grow until the next Insert
	// The pairs taken over from one older generation in a row: a run is
	// settled (that generation's count and list updated) when it ends.
	var run takeRun
	// The new generation's list and count, and the change of low, are
	// kept in locals and stored at the end (nothing reads them meanwhile).
	ents, live := gp.ents, 0
	chaos, low := a.chaos, 0
	start := 0
	if isSeq && !a.noRefreshRun {
		var gi uint32
		start, gi, ents = a.refreshRun(hs, slot, g, exp, keepLater, ents)
		if start > 0 {
			run = takeRun{gen: gi, g: &a.gens[gi], pre: start}
			live = start
			a.refreshed += uint64(start)
		}
	}
	var seq uint64
	for i := start; i < len(hs); i++ {
		h := hs[i]
		if isSeq || i == 0 {
			seq = h
		} else {
			seq = kvhash.SeqNext(seq, h)
		}
		var ei uint32
		if i < len(a.last) && a.last[i].seq == seq && a.live(a.last[i].ei, seq) {
			ei = a.last[i].ei
		} else {
			if k, ok := a.m.find(seq); ok {
				ei = a.m.s[k].v
			} else {
				ei = a.newEntry(seq)
				a.m.putAt(k, seq, ei)
			}
			if i < len(a.last) {
				a.last[i] = lastEntry{seq: seq, ei: ei}
			} else {
				a.last = append(a.last, lastEntry{seq: seq, ei: ei})
			}
		}
		e := &a.entries[ei]
		var j int
		var ok bool
		if ms := e.members; len(ms) > 0 && ms[0].slot == slot {
			ok = true // one holder, or the first: no call
		} else {
			j, ok = e.find(slot)
		}
		if ok {
			mb := &e.members[j]
			if mb.exp == exp || (keepLater && mb.exp > exp) {
				// NB: refreshed at the same instant, it keeps its place
				// (the pair's expiry did not change).
				continue
			}
			// low follows the pair's expiry across the chaos line.
			if mb.exp <= chaos {
				low--
			}
			if exp <= chaos {
				low++
			}
			if mb.gen != run.gen {
				a.settle(&run)
				run = takeRun{gen: mb.gen, g: &a.gens[mb.gen]}
			}
			run.take(ei)
			mb.exp, mb.gen = exp, g
		} else {
			old := cap(e.members)
			e.members = slices.Insert(e.members, j, amember{slot: slot, gen: g, exp: exp})
			a.memberCap += cap(e.members) - old
			a.counts[slot]++
			a.blocks++
			if exp <= chaos {
				low++
			}
		}
		ents = append(ents, ei)
		live++
	}
	a.settle(&run)
	gp.ents, gp.live = ents, live
	a.low += low
	if gp.live == 0 {
		a.dropGen(g)
	}
	if a.blocks > a.maxBlocks {
		closed := !backwards && a.low == 0
		last := a.sweep(math.MinInt64, a.pruneTo, &a.pruned)
		if closed {
			a.pruneChaos(last)
		} else {
			backwards = true
		}
	}
	if backwards {
		a.chaos, a.low = a.maxExp, a.blocks
	}
	if invariants.Enabled && a.blocks <= invariantsLimit {
		if err := a.check(); err != nil {
			panic(err)
		}
	}
}

// live reports whether entry ei is in the map under seq (a freed entry
// has no members; a reused one, another seq).
func (a *Approx) live(ei uint32, seq uint64) bool {
	e := &a.entries[ei]
	return e.seq == seq && len(e.members) > 0
}

func (a *Approx) newEntry(seq uint64) uint32 {
	if n := len(a.freeEntry); n > 0 {
		ei := a.freeEntry[n-1]
		a.freeEntry = a.freeEntry[:n-1]
		a.entries[ei].seq = seq
		return ei
	}
	a.entries = append(a.entries, aentry{seq: seq})
	return uint32(len(a.entries) - 1)
}

// sweep drops pairs from the head of the generation queue while they
// expire at or before t or more than keep pairs are held, counting them in
// *n, and returns the expiry of the last one dropped.
func (a *Approx) sweep(t int64, keep int, n *uint64) (last int64) {
	for {
		gi := a.gens[0].next
		if gi == 0 {
			return last
		}
		gp := &a.gens[gi]
		if gp.exp > t && a.blocks <= keep {
			return last
		}
		// Its deepest pair still held (the list's end; a generation in
		// the queue holds at least one).
		for {
			k := len(gp.ents) - 1 // >= gp.lo
			ei := gp.ents[k]
			gp.ents = gp.ents[:k]
			if j, ok := a.member(ei, gi); ok {
				last = gp.exp
				a.drop(ei, j)
				*n++
				break
			}
		}
	}
}

// drop deletes member j of entry ei.
func (a *Approx) drop(ei uint32, j int) {
	e := &a.entries[ei]
	mb := e.members[j]
	e.members = slices.Delete(e.members, j, j+1)
	a.leave(mb.gen)
	a.blocks--
	if mb.exp <= a.chaos {
		a.low--
	}
	a.counts[mb.slot]--
	if a.counts[mb.slot] == 0 {
		a.slots.release(mb.slot)
		a.slotsChanged()
	}
	if len(e.members) == 0 {
		a.m.del(e.seq)
		e.seq = 0
		a.freeEntry = append(a.freeEntry, ei)
	}
}

// FindMatches returns, per worker+rank, the number of leading blocks of
// locals it holds unexpired at now, sorted by worker.
func (a *Approx) FindMatches(locals []uint64, now time.Time) Overlaps {
	return a.AppendMatches(nil, locals, now)
}

// AppendMatches appends the FindMatches result to dst.
func (a *Approx) AppendMatches(dst Overlaps, locals []uint64, now time.Time) Overlaps {
	return a.appendMatches(dst, locals, false, now)
}

// AppendMatchesSeq is AppendMatches given the blocks' sequence hashes
// (kvhash.AppendSeq of the locals), or the chain InsertSeq was given.
func (a *Approx) AppendMatchesSeq(dst Overlaps, seqs []uint64, now time.Time) Overlaps {
	return a.appendMatches(dst, seqs, true, now)
}

// appendMatches is AppendMatches of hs, which are sequence hashes if isSeq
// and local hashes otherwise.
func (a *Approx) appendMatches(dst Overlaps, hs []uint64, isSeq bool, now time.Time) Overlaps {
	t := now.UnixNano()
	a.mu.RLock()
	defer a.mu.RUnlock()
	if isSeq && (a.low == 0 || t >= a.chaos) {
		return a.appendMatchesClosed(dst, hs, t)
	}
	return a.appendMatchesWalk(dst, hs, isSeq, t)
}

// appendMatchesWalk is appendMatches at t (unix nanoseconds) visiting the
// blocks one by one; a.mu is held.
func (a *Approx) appendMatchesWalk(dst Overlaps, hs []uint64, isSeq bool, t int64) Overlaps {
	base := len(dst)
	var buf [64]uint32
	alive := buf[:0]
	var seq uint64
	for i, h := range hs {
		if isSeq || i == 0 {
			seq = h
		} else {
			seq = kvhash.SeqNext(seq, h)
		}
		var ms []amember
		if ei, ok := a.m.get(seq); ok {
			ms = a.entries[ei].members
		}
		if i == 0 {
			for _, m := range ms {
				if m.exp > t {
					alive = append(alive, m.slot)
				}
			}
		} else {
			// Keep the alive workers that hold this block unexpired.
			k, j := 0, 0
			for _, s := range alive {
				for j < len(ms) && ms[j].slot < s {
					j++
				}
				if j < len(ms) && ms[j].slot == s && ms[j].exp > t {
					alive[k] = s
					k++
				} else {
					dst = append(dst, Overlap{Worker: a.slots.names[s], Blocks: i})
				}
			}
			alive = alive[:k]
		}
		if len(alive) == 0 {
			break
		}
	}
	for _, s := range alive {
		dst = append(dst, Overlap{Worker: a.slots.names[s], Blocks: len(hs)})
	}
	sortOverlaps(dst[base:])
	return dst
}

// RemoveWorker drops every rank of worker id. O(index size).
func (a *Approx) RemoveWorker(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	slots := a.slots.ranksOf(id)
	if len(slots) == 0 {
		return
	}
	defer a.rebuildOrder()
	for ei := range a.entries {
		for _, s := range slots {
			if j, ok := a.entries[ei].find(s); ok {
				a.drop(uint32(ei), j)
			}
		}
	}
}

// Stats returns a snapshot.
func (a *Approx) Stats() ApproxStats {
	a.mu.RLock()
	defer a.mu.RUnlock()
	bytes := int64(cap(a.entries))*int64(unsafe.Sizeof(aentry{})) +
		int64(a.memberCap)*int64(unsafe.Sizeof(amember{})) +
		a.m.bytes() +
		int64(cap(a.gens))*int64(unsafe.Sizeof(agen{})) + int64(a.listCap)*4 +
		int64(cap(a.freeEntry))*4 +
		int64(cap(a.last))*int64(unsafe.Sizeof(lastEntry{}))
	return ApproxStats{
		Blocks: a.blocks, Nodes: a.m.len(), Workers: len(a.slots.ids), Bytes: bytes,
		Expired: a.expired, Pruned: a.pruned,
	}
}
