package indexer

import (
	"sync/atomic"
	"unsafe"

	"github.com/kvrouter/kvrouter/internal/invariants"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// Flash is the positional index of DESIGN.md §3 with jump search.
//
// Every distinct prefix is one entry, keyed by an internal 64-bit prefix id
// of its local hashes (id[0] = local[0], id[i] = prefixID(id[i-1],
// local[i])), which the index computes at store time from the parent
// entry's. The key thus encodes position, local hash and the whole prefix:
// one map probe finds "the block at position p with exactly this prefix",
// so two prefixes that share a local hash at the same position are
// different entries and matching is exact (up to 64-bit collisions). The id
// is internal (not kvhash.SeqNext, not a wire format): see prefixID. An
// entry records its position, parent, local hash and the sorted slots of
// the workers holding it. Each worker has a reverse table engine hash ->
// entry.
//
// Memory: entries live in fixed-size chunks indexed by uint32 (no heap
// object per block, no pointers for the GC to scan), freed entries are
// reused, and an entry held by one worker keeps it inline; only entries
// held by two or more workers use a block of the member arena (blocks
// are reused per size class). So storing a new block allocates nothing
// amortized.
//
// Jump search: a worker's entries are prefix-closed (Removed drops
// descendants too), so the worker set at query position q is a subset of
// the set at p < q. FindMatches starts at position 0 and probes p+J; an
// unchanged count confirms the whole stride; otherwise it bisects the
// stride by set size to find where each lost worker dropped out. Prefix ids
// of the query are computed incrementally and only up to the last stride
// needed. Cost: O(D) cheap mixing, O(D/J) map probes, plus O(log J) probes
// and O(log W) per drop.
//
// Flash is safe for concurrent use. FindMatches takes no lock and never
// waits for a writer (flashrcu.go, flashread.go); writers (Apply,
// RemoveWorker) take a lock, spinRW, which Dump, Stats and Check take for
// reading (a long event steps aside for them between chunks, see yield).
type Flash struct {
	mu   spinRW // see spinRW
	view atomic.Pointer[fview]
	rcu  rcu
	// writing is odd while a writer holds mu: a lookup that starts and
	// ends at one even value saw no write (see AppendMatches).
	writing      atomic.Uint64
	namesChanged bool // slots.names changed since the last publish
	stride       int
	hint         int    // FlashConfig.BlocksPerWorker
	m            ptable // prefix id -> entry index
	chunks       []*fchunk
	free         []uint32   // free entries, a stack (see newEntry)
	used         int        // entries in use (not free, not retired)
	arena        []fmember  // member blocks of entries held by >= 2 workers
	freeB        [][]uint32 // class -> offsets of free blocks in arena
	slots        slotTable
	tables       []*htable // slot -> engine hash -> entry index
	rmBuf        []rmKey   // remove's scratch (write lock held)
	sink         uint64    // keeps warmStore's and warmRemove's loads

	blocks   int
	counters applyCounters
	unknown  uint64
	reads    readCounters
}

const (
	fchunkShift = 10
	fchunkSize  = 1 << fchunkShift
	noEntry     = ^uint32(0)
)

// fentry is one prefix. A free or retired entry is out of the id table;
// it has no members, or still the set word of its last member (dropLeaf).
// Lookups read seq, which does not change while the entry is in the id
// table, and mem atomically.
type fentry struct {
	seq uint64 // prefix id (the key in Flash.m); see (*Flash).local
	mem uint64 // member set; see flashmembers.go
}

// fchunk is fchunkSize entries and their parents. Lookups read an entry's
// seq and mem (16 bytes: one cache line) and a parent only at the query's
// first block, so the parents sit apart and an entry costs 20 bytes.
// Entries keep no position (they did, and were 24 bytes): a worker's
// Removed event is ordered by its parent links instead (removeOrdered).
// Measured (BenchmarkBytesPerBlock, flash heap bytes per block): unique
// 52.6 -> 48.6, unique-sweep 53.9 -> 49.9.
// Entries packed with their parents, three to a line, cost more bytes
// per block (unique 45.15 -> 46.66) and saved no time
// (docs/experiments/indexer-entry-layout.md).
type fchunk struct {
	e [fchunkSize]fentry
	// parent is each entry's parent entry (noEntry at position 0). It
	// does not change while the entry is in the id table.
	parent [fchunkSize]uint32
}

// fmember is one worker holding an entry and the number of the entry's
// children it holds (0 = leaf for this worker: removal is O(log W)).
type fmember struct {
	slot uint32
	kids uint32
}

// Prefix-id mixing constants (odd 64-bit multipliers).
const (
	pidK1 = kvhash.PrefixK1
	pidK2 = kvhash.PrefixK2
)

// prefixID is the internal id of the prefix parent+local,
// kvhash.PrefixNext: B(parent ^ local*K1) with B(x) = y ^ y>>32, y = x*K2,
// a bijection. Because B and x -> x^c are bijections, two prefixes of one
// length that differ in one position only, or share their suffix after the
// first difference, never collide (siblings and equal locals under
// different parents are always distinct); other collisions need two 64-bit
// coincidences. It is not kvhash.SeqNext (xxh3 of 16 bytes): its critical
// path is one multiply, ~1.5 ns per block against ~4.5 ns (micro-benchmark
// of a 1024-block chain on the shared 2-core machine), which dominated
// deep lookups. A caller that hashes the prompt can compute the ids with
// its hashes (kvhash.AppendLocalSeqID) and pass them (AppendMatchesIDs).
func prefixID(parent, local uint64) uint64 { return kvhash.PrefixNext(parent, local) }

// Multiplicative inverses of pidK1 and pidK2 mod 2^64.
var pidK1Inv, pidK2Inv = mulInverse(pidK1), mulInverse(pidK2)

// mulInverse returns the inverse of odd k mod 2^64 (Newton's iteration,
// each step doubling the correct low bits).
func mulInverse(k uint64) uint64 {
	x := k // correct to 3 bits for odd k
	for range 5 {
		x *= 2 - k*x
	}
	return x
}

// localOf inverts prefixID: the local hash l with prefixID(parent, l) ==
// id. Entries store no local hash (8 bytes each); Dump and Check recover
// it.
func localOf(parent, id uint64) uint64 {
	y := id ^ id>>32 // x -> x ^ x>>32 is its own inverse
	return (y*pidK2Inv ^ parent) * pidK1Inv
}

// local returns entry i's local hash (its id at position 0).
func (f *Flash) local(i uint32) uint64 {
	if p := f.parent(i); p != noEntry {
		return localOf(f.at(p).seq, f.at(i).seq)
	}
	return f.at(i).seq
}

var _ Index = (*Flash)(nil)

// NewFlash returns an empty flash index with jump stride cfg.Stride
// (default 64).
func NewFlash(cfg FlashConfig) *Flash {
	cfg = cfg.withDefaults()
	f := &Flash{stride: cfg.Stride, hint: cfg.BlocksPerWorker}
	f.publish()
	return f
}

func (f *Flash) at(i uint32) *fentry { return &f.chunks[i>>fchunkShift].e[i&(fchunkSize-1)] }

// parent returns entry i's parent entry, noEntry at position 0.
func (f *Flash) parent(i uint32) uint32 { return f.chunks[i>>fchunkShift].parent[i&(fchunkSize-1)] }

// newEntry returns the index of a new entry with id seq, set word mem
// and parent p (not in the id table yet): the last one freed, else a
// fresh one. Free entries are a stack of indexes, not a list threaded
// through the entries, so that warmStore can load the entries the next
// stores will take (a list pops one cache miss at a time, each waiting
// for the one before). The entry is written once, whole, and its chunk
// found once for it and its parent link (it was zeroed here, then
// written by the caller, which found the chunk twice more).
func (f *Flash) newEntry(seq, mem uint64, p uint32) uint32 {
	f.used++
	var i uint32
	if n := len(f.free); n > 0 {
		i = f.free[n-1]
		f.free = f.free[:n-1]
	} else {
		i = uint32(f.used + f.retiredEntries() - 1)
		if int(i) == len(f.chunks)*fchunkSize {
			old := cap(f.chunks)
			f.chunks = append(f.chunks, new(fchunk))
			if cap(f.chunks) != old {
				f.publish()
			}
		}
	}
	c := f.chunks[i>>fchunkShift]
	c.e[i&(fchunkSize-1)] = fentry{seq: seq, mem: mem}
	c.parent[i&(fchunkSize-1)] = p
	return i
}

// retiredEntries is the number of entries retired and not yet recycled.
func (f *Flash) retiredEntries() int {
	return len(f.rcu.limbo[0].entries) + len(f.rcu.limbo[1].entries)
}

// freeEntry drops entry i, e (no members left) from the id table and retires
// it: lookups may still read it until they return.
func (f *Flash) freeEntry(e *fentry, i uint32) {
	f.del(e.seq, i)
	f.retireEntry(i)
	f.used--
}

// lock takes the write lock; unlock recycles what lookups no longer read
// and releases it.
func (f *Flash) lock() {
	f.mu.Lock()
	f.writing.Add(1)
}

func (f *Flash) unlock() {
	f.quiesce()
	f.writing.Add(1)
	f.mu.Unlock()
}

// Apply implements Index.
func (f *Flash) Apply(ev *kvevents.Event) error {
	f.lock()
	defer f.unlock()
	return f.apply(ev)
}

// applyBatch applies evs under one write lock (Concurrent's writers).
func (f *Flash) applyBatch(evs []kvevents.Event, errs []error) {
	f.lock()
	defer f.unlock()
	for i := range evs {
		errs[i] = f.apply(&evs[i])
	}
}

// apply is Apply with the write lock held.
func (f *Flash) apply(ev *kvevents.Event) error { return f.counters.applyEvent(f, ev) }

// clearWorker drops everything worker+rank w holds (a Cleared event).
func (f *Flash) clearWorker(w kvevents.Worker) {
	if slot, ok := f.slots.lookup(w); ok {
		f.clear(slot)
	}
}

func (f *Flash) store(ev *kvevents.Event) error {
	w := ev.Worker()
	slot, ok := f.slots.lookup(w)
	var table *htable
	if ok {
		table = f.tables[slot]
	}
	if err := checkSelfParent(ev); err != nil {
		return err
	}
	cur, err := f.anchor(ev, table, slot)
	if err != nil {
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
		table = newHtable(max(len(ev.Blocks), f.hint))
		f.tables[slot] = table
		f.reserve(len(f.slots.ids) * f.hint)
		f.namesChanged = true
		f.publish()
	}
	seq, chained := uint64(0), cur != noEntry
	if chained {
		seq = f.at(cur).seq
	}
	for start := 0; start < len(ev.Blocks); start += warmSpan {
		if start > 0 && !f.yield(slot, table, cur) {
			return nil
		}
		blocks := ev.Blocks[start:min(start+warmSpan, len(ev.Blocks))]
		seq = f.warmStore(table, blocks, seq, chained)
		chained = true
		if err := f.storeBlocks(slot, table, &cur, blocks); err != nil {
			return err
		}
	}
	return nil
}

// yield lets readers that wait for the lock in (a long event's chunks are
// applied under separate holds, so a lookup waits for at most one chunk,
// not a whole 500-block event or a 32-event batch of them) and reports
// whether the event can go on: slot still holds table and, when cur is an
// entry, still holds cur. Both hold unless another goroutine wrote slot's
// worker meanwhile, which breaks Apply's contract; the event then stops
// there rather than touch entries it no longer owns. A lookup may thus see
// part of a large event applied: always a prefix-closed state, as if the
// engine had sent the event in pieces.
// Measured: see spinRW.
func (f *Flash) yield(slot uint32, table *htable, cur uint32) bool {
	if f.mu.waiting.Load() == 0 {
		return true
	}
	// Through unlock and lock: writing must stay odd exactly while a
	// writer holds the lock, or a lookup could take another writer's
	// hold for a quiet index.
	f.unlock()
	f.lock()
	if int(slot) >= len(f.tables) || f.tables[slot] != table {
		return false
	}
	if cur != noEntry {
		// In the id table first: a freed entry keeps its last member's
		// set word (dropLeaf).
		e := f.at(cur)
		if i, ok := f.get(e.seq); !ok || i != cur {
			return false
		}
		_, ok := f.find(e, slot)
		return ok
	}
	return true
}

// warmSpan is how many blocks warmStore and warmRemove load ahead.
const warmSpan = 32

// warmStore loads, for each block, the worker-table slot and the id-table
// slot that storeBlocks will probe first, then the entries those id slots
// point at, and returns the last block's prefix id (seq is the parent's,
// when chained). The loads are independent of one another, so the CPU
// overlaps their cache misses, where storeBlocks' probes each wait for the
// previous block's (the tables are far larger than the caches on a real
// trace: the misses were most of a Stored event's cost).
// NB: prefetch instructions in place of these loads, a chunk ahead, were
// no faster (docs/experiments/indexer-write-mlp.md).
func (f *Flash) warmStore(table *htable, blocks []kvevents.Block, seq uint64, chained bool) uint64 {
	var seqs, homes [warmSpan]uint64
	var sink uint64
	ids := f.m.slots
	for i, b := range blocks {
		if chained {
			seq = prefixID(seq, b.Local)
		} else {
			seq, chained = b.Local, true
		}
		seqs[i] = seq
		sink += uint64(table.s[table.home(b.Hash)].v)
		if len(ids) > 0 {
			homes[i] = pHome(seq, len(ids))
			sink += ids[homes[i]]
		}
	}
	if len(ids) > 0 {
		for i, q := range seqs[:len(blocks)] {
			if x := ids[homes[i]]; uint32(x) != 0 && x&^0xffffffff == ptag(q) {
				sink += f.at(uint32(x) - 1).seq
			}
		}
	}
	// The free entries new blocks will take (at most one per block).
	free := f.free[max(0, len(f.free)-len(blocks)):]
	for _, i := range free {
		sink += f.at(i).seq
	}
	f.sink = sink
	return seq
}

// storeBlocks stores blocks (store's loop), cur the entry of the block
// before them (noEntry at the root).
//
// A new entry is published (put) with its member and, when the next block
// of the chunk will be its child, that child already counted: a member
// set word is stored atomically (lookups read it without a lock), and an
// atomic store waits for every store before it to reach the cache, so one
// per new block instead of three (put, the member, the parent's child
// count) let a chain's stores overlap their cache misses. pre records
// that cur's count already includes the block being stored; a block that
// turns out not to be cur's new child (one the worker holds already: a
// repeated hash, a hash it holds elsewhere, a prefix-id collision; rare)
// takes the count back. A member added to an entry other workers hold
// (a shared prefix) is counted ahead likewise: the next block then need
// not search the entry's member block again for the worker's place.
// Measured: see docs/experiments/indexer-write-mlp.md.
func (f *Flash) storeBlocks(slot uint32, table *htable, pcur *uint32, blocks []kvevents.Block) error {
	cur := *pcur
	defer func() { *pcur = cur }()
	pre := false
	// curSeq is cur's prefix id, kept in a register: loaded from the
	// entry just written, the next block's id and its probe's address
	// waited for the load, which cannot pass putAt's atomic store.
	var curSeq uint64
	if cur != noEntry {
		curSeq = f.at(cur).seq
	}
	for k, b := range blocks {
		// One probe of the worker's table answers "held already?" and
		// reserves the slot the block goes to (engines store new blocks,
		// so this is almost always a miss, the longest probe).
		ti, held := table.find(b.Hash)
		if held {
			f.unpre(pre, cur, slot)
			pre = false
			cur = table.s[ti].v
			curSeq = f.at(cur).seq
			continue
		}
		seq := b.Local
		if cur != noEntry {
			seq = prefixID(curSeq, b.Local)
		}
		m := fmember{slot: slot}
		next := k+1 < len(blocks)
		if next {
			m.kids = 1
		}
		ei, ok, ins := f.probe(seq)
		if !ok {
			ei = f.newEntry(seq, oneWord(m), cur)
			f.putAt(ins, seq, ei)
		} else {
			e := f.at(ei)
			i, held := f.find(e, slot)
			if held {
				f.unpre(pre, cur, slot)
				pre = false
				cur, curSeq = ei, seq
				continue
			}
			f.addMember(e, i, m)
		}
		if cur != noEntry && !pre {
			c := f.at(cur)
			j, _ := f.find(c, slot)
			f.addKids(c, j, 1)
		}
		pre = next
		table.putAt(ti, b.Hash, ei)
		f.blocks++
		cur, curSeq = ei, seq
	}
	f.unpre(pre, cur, slot)
	return nil
}

// unpre takes back the child that storeBlocks counted ahead in entry cur
// when pre is set and the child was not stored.
func (f *Flash) unpre(pre bool, cur, slot uint32) {
	if pre {
		c := f.at(cur)
		j, _ := f.find(c, slot)
		f.addKids(c, j, -1)
	}
}

// rmKey is a hash of a Removed event with its entry (noEntry when
// unknown) and its worker-table slot ti (-1) when the event started, and
// its depth (removeDeferred). held checks ti before it probes: removals
// move a key back only when they empty a slot of its run before it, so
// the slot found up front mostly still holds the key.
// Measured (BenchmarkStoreRemove flash, valgrind --tool=callgrind):
// 739 -> 713 instructions per block op.
type rmKey struct {
	h     uint64
	ei    uint32
	depth uint32
	ti    int32
}

// warmTable loads the worker-table slot each hash's probe starts at (see
// warmStore).
func (f *Flash) warmTable(table *htable, hashes []uint64) {
	var sink uint64
	for _, h := range hashes {
		sink += uint64(table.s[table.home(h)].v)
	}
	f.sink += sink
}

// warmRemove loads what removing each resolved key will touch beyond its
// entry: the entry's id-table slot, its parent and its member slice.
func (f *Flash) warmRemove(keys []rmKey) {
	var sink uint64
	ids := f.m.slots
	for _, k := range keys {
		if k.ei == noEntry {
			continue
		}
		e := f.at(k.ei)
		sink += ids[f.m.home(e.seq)]
		if p := f.parent(k.ei); p != noEntry {
			sink += f.at(p).mem
		}
		if e.count() >= 2 {
			sink += uint64(f.arena[uint32(e.mem)].slot)
		}
	}
	f.sink += sink
}

func (f *Flash) remove(ev *kvevents.Event) {
	slot, ok := f.slots.lookup(ev.Worker())
	if !ok {
		f.unknown += uint64(len(ev.Hashes))
		return
	}
	table := f.tables[slot]
	// Leaf first (see Radix.remove): this pass, in event order, drops
	// every hash that is a leaf for the worker by then (all of them when
	// the event is leaf-first, as engines mostly send them) and leaves
	// the others to removeDeferred. Each hash is resolved once into
	// scratch space.
	// The scratch is taken, not borrowed: yield may let another
	// goroutine's remove run meanwhile.
	keys := f.rmBuf[:0]
	f.rmBuf = nil
	for start := 0; start < len(ev.Hashes); start += warmSpan {
		hashes := ev.Hashes[start:min(start+warmSpan, len(ev.Hashes))]
		f.warmTable(table, hashes)
		for _, h := range hashes {
			k := rmKey{h: h, ei: noEntry, ti: -1}
			if ti, ok := table.find(h); ok {
				k.ei, k.ti = table.s[ti].v, int32(ti)
			}
			keys = append(keys, k)
		}
		f.warmRemove(keys[start:])
	}
	deferred := keys[:0] // in place: behind the loop's index
	// pend is an entry whose child count for slot is one too high: the
	// parent of the last leaf dropped, whose count is taken back only when
	// the next hash is not that parent (a leaf-first chain's next hash
	// is, and drops the parent's member with its count: one atomic set
	// word store less per block, see removeLeafAt).
	pend := noEntry
	for n, k := range keys {
		if n > 0 && n%warmSpan == 0 {
			pend = f.decKids(pend, slot)
			if !f.yield(slot, table, noEntry) {
				f.rmBuf = keys[:0]
				return
			}
		}
		ti, ei, e, i, kids, ok := f.held(slot, table, k)
		if !ok {
			continue
		}
		if ei == pend {
			if kids--; kids > 0 {
				f.decKids(pend, slot)
			}
			pend = noEntry
		}
		if kids > 0 {
			deferred = append(deferred, k)
			continue
		}
		pi := f.dropLeaf(table, ti, ei, e, i)
		f.decKids(pend, slot)
		pend = pi
	}
	f.decKids(pend, slot)
	if len(deferred) > 0 && !f.removeDeferred(slot, table, deferred) {
		f.rmBuf = keys[:0]
		return
	}
	f.rmBuf = keys[:0]
	if table.len() == 0 {
		f.tables[slot] = nil
		f.retireSlot(slot)
	}
}

// removeLeaf drops slot from entry ei, which it holds under h and whose
// children it does not hold.
func (f *Flash) removeLeaf(slot uint32, table *htable, h uint64, ei uint32) {
	i, _ := f.find(f.at(ei), slot)
	f.removeLeafAt(slot, table, table.slot(h), ei, i)
}

// removeLeafAt is removeLeaf with h's table slot ti and slot's member
// index i in the entry already found.
func (f *Flash) removeLeafAt(slot uint32, table *htable, ti int, ei uint32, i int) {
	f.decKids(f.dropLeaf(table, ti, ei, f.at(ei), i), slot)
}

// dropLeaf is removeLeafAt (e is entry ei) without taking back the child from its parent,
// which it returns (noEntry at the root) for the caller to do (decKids).
// remove puts the taking back off until the next hash is known not to be
// the parent: a leaf-first chain then does no find and no atomic set word
// store for it. Measured (BenchmarkStoreRemove flash, valgrind
// --tool=callgrind): 713 -> 697 instructions per block op.
//
// An entry whose last member goes keeps that member's set word: it leaves
// the id table (freeEntry) and lookups reach entries only through it, so
// a lookup that still reads the word found the entry before it left, when
// the word was true; newEntry rewrites the entry when it is reused. That is
// an atomic store less per entry freed. Measured (BenchmarkStoreRemove
// flash, callgrind): 698 -> 686 instructions per block op.
func (f *Flash) dropLeaf(table *htable, ti int, ei uint32, e *fentry, i int) uint32 {
	last := e.count() == 1
	if !last {
		f.delMember(e, i)
	}
	table.delAt(ti)
	f.blocks--
	pi := f.parent(ei)
	if last {
		f.freeEntry(e, ei)
	}
	return pi
}

// decKids takes one child of slot's from entry pi (none for noEntry) and
// returns noEntry. It inlines: remove calls it for every hash, mostly
// with noEntry.
func (f *Flash) decKids(pi, slot uint32) uint32 {
	if pi != noEntry {
		f.takeKid(pi, slot)
	}
	return noEntry
}

// takeKid is decKids for an entry.
func (f *Flash) takeKid(pi, slot uint32) {
	p := f.at(pi)
	j, _ := f.find(p, slot)
	f.addKids(p, j, -1)
}

func (f *Flash) clear(slot uint32) {
	table := f.tables[slot]
	for _, ei := range table.all() {
		e := f.at(ei)
		i, _ := f.find(e, slot)
		f.delMember(e, i)
		if e.count() == 0 {
			f.freeEntry(e, ei)
		}
	}
	f.blocks -= table.len()
	f.tables[slot] = nil
	f.retireSlot(slot)
}

// RemoveWorker implements Index.
func (f *Flash) RemoveWorker(id uint64) {
	f.lock()
	defer f.unlock()
	for _, slot := range f.slots.ranksOf(id) {
		f.clear(slot)
	}
	f.maybeCheck()
}

// Dump implements Index.
func (f *Flash) Dump() []kvevents.Event {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []kvevents.Event
	for _, slot := range f.slots.sorted() {
		table := f.tables[slot]
		hashOf := make(map[uint32]uint64, table.len())
		for h, ei := range table.all() {
			hashOf[ei] = h
		}
		blocks := make([]dumpBlock, 0, table.len())
		for h, ei := range table.all() {
			b := dumpBlock{hash: h, local: f.local(ei)}
			if p := f.parent(ei); p != noEntry {
				b.hasParent, b.parent = true, hashOf[p]
			}
			blocks = append(blocks, b)
		}
		out = dumpWorker(out, f.slots.names[slot], blocks)
	}
	return out
}

// Stats implements Index. Bytes counts the entry chunks (allocated, used
// or free), member slices (by capacity), the entry map and the per-worker
// tables.
func (f *Flash) Stats() Stats {
	f.mu.RLock()
	defer f.mu.RUnlock()
	bytes := int64(len(f.chunks))*int64(unsafe.Sizeof(fchunk{})) +
		int64(cap(f.arena))*int64(unsafe.Sizeof(fmember{})) +
		f.freeBytes() + int64(cap(f.free))*4 +
		int64(len(f.m.slots))*8 +
		f.tableBytes() +
		int64(len(f.tables))*int64(ptrSize+unsafe.Sizeof(kvevents.Worker{}))
	return Stats{
		Blocks: f.blocks, Nodes: f.m.n, Workers: len(f.slots.ids), Bytes: bytes,
		Applied: f.counters.applied, Rejected: f.counters.rejected, UnknownRemove: f.unknown,
		SafeStarted: f.reads.started.Load(), SafeRedone: f.reads.redone.Load(),
	}
}

func (f *Flash) maybeCheck() {
	if invariants.Enabled && f.blocks <= invariantsLimit {
		if err := f.check(); err != nil {
			panic(err)
		}
	}
}

// tableBytes is the memory of the per-worker tables.
func (f *Flash) tableBytes() int64 {
	var n int64
	for _, t := range f.tables {
		if t != nil {
			n += t.bytes() + int64(unsafe.Sizeof(*t))
		}
	}
	return n
}

// freeBytes is the memory of the free-block lists.
func (f *Flash) freeBytes() int64 {
	n := int64(cap(f.freeB)) * int64(unsafe.Sizeof([]uint32{}))
	for _, l := range f.freeB {
		n += int64(cap(l)) * 4
	}
	return n
}
