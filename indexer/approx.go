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
// clock. Expiry order is a doubly linked list of the held pairs in the
// order of the Insert that last set their expiry (deepest block first
// within one Insert, so that pruning ties drop leaves first): a refresh
// moves a pair to the tail in O(1), so the list never holds stale records
// and needs no compaction. The order is exact while the now values passed
// to Insert do not decrease (the normal case) and approximate otherwise.
//
// Steady-state Insert and lookups do not allocate: entries, their member
// slices and list nodes are reused from free lists.
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
	// nodes[0] is the expiry list's sentinel: its next is the earliest
	// expiry, its prev the latest. Free nodes chain through next from
	// freeNode (0: none).
	nodes    []anode
	freeNode uint32
	blocks   int

	memberCap int
	expired   uint64
	pruned    uint64

	// Prefix closure (approxclosed.go): maxExp bounds every held pair's
	// expiry; low counts the held pairs expiring at or before chaos, the
	// maxExp of the last event that may have broken the closure.
	maxExp, chaos int64
	low           int

	// last caches the entries of the blocks of recent Inserts, by
	// position in the prompt: consecutive prompts often share a prefix (a
	// system prompt, a conversation's history), whose blocks then need no
	// map probe. An item is used only if its entry still holds that block.
	last []lastEntry
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
	node uint32 // its place in the expiry list
	exp  int64  // unix nanoseconds (also in the node: lookups read it here)
}

// anode is one held (block, worker) pair in the expiry list.
type anode struct {
	seq        uint64
	exp        int64
	prev, next uint32
	slot       uint32
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
		nodes:     make([]anode, 1),
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
	// Bisection written out: slices.BinarySearchFunc calls its compare
	// function per step.
	ms := e.members
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
	a.insert(w, locals, false, now)
}

// InsertSeq is Insert given the blocks' sequence hashes
// (kvhash.AppendSeq of the locals), which a router has already computed.
func (a *Approx) InsertSeq(w kvevents.Worker, seqs []uint64, now time.Time) {
	a.insert(w, seqs, true, now)
}

// insert is Insert of hs, which are sequence hashes if isSeq and local
// hashes otherwise.
func (a *Approx) insert(w kvevents.Worker, hs []uint64, isSeq bool, now time.Time) {
	if len(hs) == 0 {
		return
	}
	t := now.UnixNano()
	exp := t + a.ttl
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(t, math.MaxInt, &a.expired)
	if a.blocks == 0 {
		a.maxExp = math.MinInt64
	}
	// An earlier expiry than one held (now went backwards) may leave a
	// block expiring before its descendants.
	backwards := exp < a.maxExp
	a.maxExp = max(a.maxExp, exp)
	slot := a.slots.acquire(w)
	for int(slot) >= len(a.counts) {
		a.counts = append(a.counts, 0)
	}
	// This Insert's pairs form a segment, deepest first, appended to the
	// list's tail at the end.
	var segHead, segTail uint32
	var seq uint64
	for i, h := range hs {
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
		j, ok := e.find(slot)
		var ni uint32
		if ok {
			mb := &e.members[j]
			if mb.exp == exp {
				// NB: refreshed at the same instant, it keeps its place
				// (the pair's expiry did not change).
				continue
			}
			a.lowMoved(mb.exp, exp)
			mb.exp = exp
			ni = mb.node
			a.nodes[ni].exp = exp
			a.unlink(ni)
		} else {
			ni = a.newNode(seq, slot, exp)
			old := cap(e.members)
			e.members = slices.Insert(e.members, j, amember{slot: slot, node: ni, exp: exp})
			a.memberCap += cap(e.members) - old
			a.counts[slot]++
			a.blocks++
			if exp <= a.chaos {
				a.low++
			}
		}
		n := &a.nodes[ni]
		n.prev, n.next = 0, segHead
		if segHead != 0 {
			a.nodes[segHead].prev = ni
		} else {
			segTail = ni
		}
		segHead = ni
	}
	if segHead != 0 {
		last := a.nodes[0].prev
		a.nodes[last].next = segHead
		a.nodes[segHead].prev = last
		a.nodes[segTail].next = 0
		a.nodes[0].prev = segTail
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

func (a *Approx) newNode(seq uint64, slot uint32, exp int64) uint32 {
	ni := a.freeNode
	if ni != 0 {
		a.freeNode = a.nodes[ni].next
	} else {
		a.nodes = append(a.nodes, anode{})
		ni = uint32(len(a.nodes) - 1)
	}
	a.nodes[ni] = anode{seq: seq, exp: exp, slot: slot}
	return ni
}

func (a *Approx) unlink(ni uint32) {
	n := &a.nodes[ni]
	a.nodes[n.prev].next = n.next
	a.nodes[n.next].prev = n.prev
}

// sweep drops pairs from the head of the expiry list while they expire at
// or before t or more than keep pairs are held, counting them in *n, and
// returns the expiry of the last one dropped.
func (a *Approx) sweep(t int64, keep int, n *uint64) (last int64) {
	for {
		ni := a.nodes[0].next
		if ni == 0 || (a.nodes[ni].exp > t && a.blocks <= keep) {
			return last
		}
		nd := &a.nodes[ni]
		last = nd.exp
		ei, _ := a.m.get(nd.seq)
		j, _ := a.entries[ei].find(nd.slot)
		a.drop(ei, j)
		*n++
	}
}

// drop deletes member j of entry ei and its list node.
func (a *Approx) drop(ei uint32, j int) {
	e := &a.entries[ei]
	mb := e.members[j]
	a.unlink(mb.node)
	a.nodes[mb.node] = anode{next: a.freeNode}
	a.freeNode = mb.node
	e.members = slices.Delete(e.members, j, j+1)
	a.blocks--
	if mb.exp <= a.chaos {
		a.low--
	}
	a.counts[mb.slot]--
	if a.counts[mb.slot] == 0 {
		a.slots.release(mb.slot)
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
// (kvhash.AppendSeq of the locals).
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
		int64(cap(a.nodes))*int64(unsafe.Sizeof(anode{})) +
		int64(cap(a.freeEntry))*4 +
		int64(cap(a.last))*int64(unsafe.Sizeof(lastEntry{}))
	return ApproxStats{
		Blocks: a.blocks, Nodes: a.m.len(), Workers: len(a.slots.ids), Bytes: bytes,
		Expired: a.expired, Pruned: a.pruned,
	}
}
