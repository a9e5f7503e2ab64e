package indexer

import (
	"cmp"
	"slices"
	"sync"
	"time"
	"unsafe"

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
// clock. Expiry order is kept in a FIFO of insertions, which is exact while
// the now values passed to Insert do not decrease (the normal case) and
// approximate otherwise.
//
// Approx is safe for concurrent use (one RWMutex).
type Approx struct {
	mu        sync.RWMutex
	ttl       int64
	maxBlocks int
	pruneTo   int

	m      map[uint64]*aentry
	slots  slotTable
	counts []int // slot -> blocks held
	queue  []arec
	head   int
	blocks int

	memberCap int
	expired   uint64
	pruned    uint64
}

type aentry struct {
	seq     uint64
	members []amember // sorted by slot
}

type amember struct {
	slot uint32
	exp  int64 // unix nanoseconds
}

// arec is one insertion in expiry order; stale when the member's exp has
// since been refreshed.
type arec struct {
	seq  uint64
	exp  int64
	slot uint32
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
		m:         make(map[uint64]*aentry),
	}
}

func (e *aentry) find(slot uint32) (int, bool) {
	return slices.BinarySearchFunc(e.members, slot, func(m amember, s uint32) int { return cmp.Compare(m.slot, s) })
}

// Insert records that worker w now holds the blocks of locals (a routed
// request's local hashes), expiring at now + TTL.
func (a *Approx) Insert(w kvevents.Worker, locals []uint64, now time.Time) {
	if len(locals) == 0 {
		return
	}
	t := now.UnixNano()
	exp := t + a.ttl
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweep(func(r arec) bool { return r.exp <= t }, &a.expired)
	slot := a.slots.acquire(w)
	for int(slot) >= len(a.counts) {
		a.counts = append(a.counts, 0)
	}
	// Queue records deepest first so that pruning ties drop leaves first.
	start := len(a.queue)
	var seq uint64
	for i, l := range locals {
		if i == 0 {
			seq = l
		} else {
			seq = kvhash.SeqNext(seq, l)
		}
		e := a.m[seq]
		if e == nil {
			e = &aentry{seq: seq}
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
		} else {
			old := cap(e.members)
			e.members = slices.Insert(e.members, j, amember{slot: slot, exp: exp})
			a.memberCap += cap(e.members) - old
			a.counts[slot]++
			a.blocks++
		}
		a.queue = append(a.queue, arec{seq: seq, exp: exp, slot: slot})
	}
	slices.Reverse(a.queue[start:])
	if a.blocks > a.maxBlocks {
		a.sweep(func(arec) bool { return a.blocks > a.pruneTo }, &a.pruned)
	}
	if live := len(a.queue) - a.head; live > 2*a.blocks+1024 {
		a.compact()
	}
}

// sweep pops queue records while more(rec) holds, deleting the pairs they
// still describe and counting them in *n.
func (a *Approx) sweep(more func(arec) bool, n *uint64) {
	for a.head < len(a.queue) && more(a.queue[a.head]) {
		r := a.queue[a.head]
		a.head++
		e := a.m[r.seq]
		if e == nil {
			continue
		}
		j, ok := e.find(r.slot)
		if !ok || e.members[j].exp != r.exp {
			continue // stale: refreshed or already gone
		}
		a.drop(e, j)
		*n++
	}
	if a.head == len(a.queue) {
		a.queue, a.head = a.queue[:0], 0
	}
}

func (a *Approx) drop(e *aentry, j int) {
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
func (a *Approx) compact() {
	q := make([]arec, 0, a.blocks)
	for _, r := range a.queue[a.head:] {
		if e := a.m[r.seq]; e != nil {
			if j, ok := e.find(r.slot); ok && e.members[j].exp == r.exp {
				q = append(q, r)
			}
		}
	}
	a.queue, a.head = q, 0
}

// FindMatches returns, per worker+rank, the number of leading blocks of
// locals it holds unexpired at now, sorted by worker.
func (a *Approx) FindMatches(locals []uint64, now time.Time) Overlaps {
	return a.AppendMatches(nil, locals, now)
}

// AppendMatches appends the FindMatches result to dst.
func (a *Approx) AppendMatches(dst Overlaps, locals []uint64, now time.Time) Overlaps {
	t := now.UnixNano()
	a.mu.RLock()
	defer a.mu.RUnlock()
	base := len(dst)
	var buf [64]uint32
	alive := buf[:0]
	var seq uint64
	for i, l := range locals {
		if i == 0 {
			seq = l
		} else {
			seq = kvhash.SeqNext(seq, l)
		}
		e := a.m[seq]
		var ms []amember
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
func (a *Approx) RemoveWorker(id uint64) {
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
func (a *Approx) Stats() ApproxStats {
	a.mu.RLock()
	defer a.mu.RUnlock()
	bytes := int64(len(a.m))*int64(unsafe.Sizeof(aentry{})) +
		int64(a.memberCap)*int64(unsafe.Sizeof(amember{})) +
		mapBytes(len(a.m), 8+ptrSize) +
		int64(cap(a.queue))*int64(unsafe.Sizeof(arec{}))
	return ApproxStats{
		Blocks: a.blocks, Nodes: len(a.m), Workers: len(a.slots.ids), Bytes: bytes,
		Expired: a.expired, Pruned: a.pruned,
	}
}
