package indexer

// refApprox is the previous Approx implementation (a FIFO of insertion
// records, stale ones skipped on sweep and dropped by compaction), kept
// unchanged as the reference model of TestApproxDifferential: Approx's
// generation queue must expire, prune and match exactly as it did.
//
// One change: a record is matched to its member by a ticket instead of by
// the expiry. With the expiry, a pair deleted early (pruned, or its worker
// removed) and inserted again at the same instant, possibly for another
// worker that reused the slot, was deleted again at the old record's
// earlier place; Approx's generations have no such alias.
//
// And one addition: with seqs set, inputs are sequence hashes taken as
// they are, not local hashes to chain (TestApproxNotChains).

import (
	"cmp"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// refApprox is the approximate prefix index for fleets without KV events
// (DESIGN.md §3, approximate mode): the router inserts each routed
// request's blocks for the chosen worker with an expiry of now + TTL
// (re-routing refreshes it). Lookups ignore expired blocks; expired blocks
// are deleted lazily by the next Insert. When more than MaxBlocks (worker,
// block) pairs are held, Insert prunes in expiry order down to
// PruneFraction of MaxBlocks.
//
// Blocks are keyed by the router sequence hash of their prefix, so matching
// has exact prefix semantics. Time is always passed in; refApprox reads no
// clock. Expiry order is kept in a FIFO of insertions, which is exact while
// the now values passed to Insert do not decrease (the normal case) and
// approximate otherwise.
//
// refApprox is safe for concurrent use (one RWMutex).
type refApprox struct {
	mu        sync.RWMutex
	ttl       int64
	maxBlocks int
	pruneTo   int

	m      map[uint64]*refEntry
	slots  slotTable
	counts []int // slot -> blocks held
	queue  []refRec
	head   int
	blocks int

	memberCap int
	tickets   uint64
	expired   uint64
	pruned    uint64

	seqs bool
}

type refEntry struct {
	seq     uint64
	members []refMember // sorted by slot
}

type refMember struct {
	slot uint32
	exp  int64  // unix nanoseconds
	rec  uint64 // ticket of its live queue record
}

// refRec is one insertion in expiry order; stale when the member's exp has
// since been refreshed.
type refRec struct {
	seq  uint64
	exp  int64
	slot uint32
	id   uint64 // ticket
}

// refApproxStats is a snapshot of an refApprox index.
type refApproxStats struct {
	Blocks  int    // (worker, block) pairs held, expired or not yet swept
	Nodes   int    // distinct prefixes
	Workers int    // worker+ranks holding blocks
	Bytes   int64  // approximate bytes in use
	Expired uint64 // pairs deleted because their TTL passed
	Pruned  uint64 // pairs deleted early by the size bound
}

// newRefApprox returns an empty approximate index using cfg.TTL (default
// 120 s), cfg.MaxBlocks (default 2^20) and cfg.PruneFraction (default 0.8).
func newRefApprox(cfg ApproxConfig) *refApprox {
	cfg = cfg.withDefaults()
	return &refApprox{
		ttl:       int64(cfg.TTL),
		maxBlocks: cfg.MaxBlocks,
		pruneTo:   int(float64(cfg.MaxBlocks) * cfg.PruneFraction),
		m:         make(map[uint64]*refEntry),
	}
}

func (e *refEntry) find(slot uint32) (int, bool) {
	return slices.BinarySearchFunc(e.members, slot, func(m refMember, s uint32) int { return cmp.Compare(m.slot, s) })
}

// Insert records that worker w now holds the blocks of locals (a routed
// request's local hashes), expiring at now + TTL.
func (a *refApprox) Insert(w kvevents.Worker, locals []uint64, now time.Time) {
	if len(locals) == 0 {
		return
	}
	t := now.UnixNano()
	exp := t + a.ttl
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(func(r refRec) bool { return r.exp <= t }, &a.expired)
	slot := a.slots.acquire(w)
	for int(slot) >= len(a.counts) {
		a.counts = append(a.counts, 0)
	}
	// Queue records deepest first so that pruning ties drop leaves first.
	start := len(a.queue)
	var seq uint64
	for i, l := range locals {
		if i == 0 || a.seqs {
			seq = l
		} else {
			seq = kvhash.SeqNext(seq, l)
		}
		e := a.m[seq]
		if e == nil {
			e = &refEntry{seq: seq}
			a.m[seq] = e
		}
		j, ok := e.find(slot)
		if ok {
			if e.members[j].exp == exp {
				// NB: refreshed at the same instant, its queue record is
				// already there; another would never be compacted away
				// (equal expiry) and, with many decisions at one
				// timestamp (a simulator's batch), compaction would run
				// on every insert.
				continue
			}
			e.members[j].exp = exp
			a.tickets++
			e.members[j].rec = a.tickets
		} else {
			old := cap(e.members)
			a.tickets++
			e.members = slices.Insert(e.members, j, refMember{slot: slot, exp: exp, rec: a.tickets})
			a.memberCap += cap(e.members) - old
			a.counts[slot]++
			a.blocks++
		}
		a.queue = append(a.queue, refRec{seq: seq, exp: exp, slot: slot, id: a.tickets})
	}
	slices.Reverse(a.queue[start:])
	if a.blocks > a.maxBlocks {
		a.sweep(func(refRec) bool { return a.blocks > a.pruneTo }, &a.pruned)
	}
	if live := len(a.queue) - a.head; live > 2*a.blocks+1024 {
		a.compact()
	}
}

// sweep pops queue records while more(rec) holds, deleting the pairs they
// still describe and counting them in *n.
func (a *refApprox) sweep(more func(refRec) bool, n *uint64) {
	for a.head < len(a.queue) && more(a.queue[a.head]) {
		r := a.queue[a.head]
		a.head++
		e := a.m[r.seq]
		if e == nil {
			continue
		}
		j, ok := e.find(r.slot)
		if !ok || e.members[j].rec != r.id {
			continue // stale: refreshed or already gone
		}
		a.drop(e, j)
		*n++
	}
	if a.head == len(a.queue) {
		a.queue, a.head = a.queue[:0], 0
	}
}

func (a *refApprox) drop(e *refEntry, j int) {
	slot := e.members[j].slot
	e.members = slices.Delete(e.members, j, j+1)
	a.blocks--
	a.counts[slot]--
	if a.counts[slot] == 0 {
		a.slots.release(slot)
	}
	if len(e.members) == 0 {
		a.memberCap -= cap(e.members)
		delete(a.m, e.seq)
	}
}

// compact rebuilds the queue from live pairs, dropping stale records.
func (a *refApprox) compact() {
	q := make([]refRec, 0, a.blocks)
	for _, r := range a.queue[a.head:] {
		if e := a.m[r.seq]; e != nil {
			if j, ok := e.find(r.slot); ok && e.members[j].rec == r.id {
				q = append(q, r)
			}
		}
	}
	a.queue, a.head = q, 0
}

// FindMatches returns, per worker+rank, the number of leading blocks of
// locals it holds unexpired at now, sorted by worker.
func (a *refApprox) FindMatches(locals []uint64, now time.Time) Overlaps {
	return a.AppendMatches(nil, locals, now)
}

// AppendMatches appends the FindMatches result to dst.
func (a *refApprox) AppendMatches(dst Overlaps, locals []uint64, now time.Time) Overlaps {
	t := now.UnixNano()
	a.mu.RLock()
	defer a.mu.RUnlock()
	base := len(dst)
	var buf [64]uint32
	alive := buf[:0]
	var seq uint64
	for i, l := range locals {
		if i == 0 || a.seqs {
			seq = l
		} else {
			seq = kvhash.SeqNext(seq, l)
		}
		e := a.m[seq]
		var ms []refMember
		if e != nil {
			ms = e.members
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
		dst = append(dst, Overlap{Worker: a.slots.names[s], Blocks: len(locals)})
	}
	sortOverlaps(dst[base:])
	return dst
}

// RemoveWorker drops every rank of worker id. O(index size).
func (a *refApprox) RemoveWorker(id uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	slots := a.slots.ranksOf(id)
	if len(slots) == 0 {
		return
	}
	for _, e := range a.m {
		for _, s := range slots {
			if j, ok := e.find(s); ok {
				a.drop(e, j)
			}
		}
	}
}

// Stats returns a snapshot.
func (a *refApprox) Stats() refApproxStats {
	a.mu.RLock()
	defer a.mu.RUnlock()
	bytes := int64(len(a.m))*int64(unsafe.Sizeof(refEntry{})) +
		int64(a.memberCap)*int64(unsafe.Sizeof(refMember{})) +
		mapBytes(len(a.m), 8+ptrSize) +
		int64(cap(a.queue))*int64(unsafe.Sizeof(refRec{}))
	return refApproxStats{
		Blocks: a.blocks, Nodes: len(a.m), Workers: len(a.slots.ids), Bytes: bytes,
		Expired: a.expired, Pruned: a.pruned,
	}
}
