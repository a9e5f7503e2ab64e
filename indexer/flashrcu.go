package indexer

import (
	"fmt"
	"sync/atomic"

	"github.com/kvrouter/kvrouter/kvevents"
)

// Lock-free lookups (DESIGN.md §3 Concurrency): Flash's FindMatches takes
// no lock. It reads what writers publish with atomic stores (the id table's
// words, each entry's member-set word fentry.mem, and fview, the arrays
// behind them), and writers never change in place anything a lookup reads:
// a member set changes by a new block and a swap of its word, a deleted id
// leaves a tombstone, a grown table is a new array. What a writer frees
// (an entry, a member block, a worker slot) it retires, and reuses only
// after every lookup that might still read it has returned: epoch-based
// reclamation with two epochs. A lookup announces itself in the current
// epoch's counter; a writer advances the epoch once the previous epoch's
// counter is zero, and then recycles what it retired in the previous
// epoch. No lookup waits for a writer, and no writer waits for a lookup: a
// lookup still running only postpones recycling.
//
// Why: with the reader-writer lock, a lookup waited for a whole write
// hold, and on a loaded machine the OS deschedules a writer inside one now
// and then (a scheduler time slice, milliseconds): that was the lookup
// tail of `kvrouter-study bench index`. A seqlock would not help: its readers
// retry while any write is in flight, and writers run continuously.

// fview is what a lookup reads through: the arrays writers replace when
// they grow. Slices cover whole backing arrays (len = cap), so that an
// array writers extend in place needs no new view; a lookup that meets an
// index beyond its view loads the newer one (the writer published it
// before the word that led there).
type fview struct {
	ids     []uint64 // the id table's slots (ptable)
	chunks  []*fchunk
	arena   []fmember
	names   []kvevents.Worker // slot -> worker, a copy
	rank    []uint32          // slot -> place of names[slot] in worker order (flashorder.go)
	ordered bool              // names of used slots are in worker order
}

// publish stores a new view of f's arrays (writers, after replacing one).
func (f *Flash) publish() {
	v := &fview{
		ids:     f.m.slots,
		chunks:  f.chunks[:cap(f.chunks)],
		arena:   f.arena[:cap(f.arena)],
		ordered: f.slots.ordered && f.rcu.pendingSlots() == 0,
	}
	if old := f.view.Load(); old != nil && !f.namesChanged {
		v.names, v.rank = old.names, old.rank
	} else {
		v.names = append([]kvevents.Worker(nil), f.slots.names...)
		v.rank = workerRanks(v.names)
		f.namesChanged = false
	}
	f.view.Store(v)
}

// rcu is the epoch state of Flash's lookups.
type rcu struct {
	epoch  atomic.Uint64
	active [2]readers
	limbo  [2]retired // by epoch parity: retired during that epoch
}

// readers counts the lookups of one epoch parity (own cache line: readers
// of the two parities do not share one).
type readers struct {
	n atomic.Int64
	_ [56]byte
}

// retired is what writers freed during one epoch.
type retired struct {
	entries []uint32
	blocks  []retiredBlock
	slots   []uint32
}

type retiredBlock struct {
	off   uint32
	class int
}

func (r *retired) empty() bool {
	return len(r.entries) == 0 && len(r.blocks) == 0 && len(r.slots) == 0
}

func (r *rcu) pendingSlots() int { return len(r.limbo[0].slots) + len(r.limbo[1].slots) }

// enterRead announces a lookup and returns its epoch for exitRead.
func (f *Flash) enterRead() uint64 {
	for {
		e := f.rcu.epoch.Load()
		f.rcu.active[e&1].n.Add(1)
		// The epoch may have advanced after the load, and its writer may
		// have found the counter zero before the add; then this lookup
		// must not count as one of that epoch: announce again.
		if f.rcu.epoch.Load() == e {
			return e
		}
		f.rcu.active[e&1].n.Add(-1)
	}
}

func (f *Flash) exitRead(e uint64) { f.rcu.active[e&1].n.Add(-1) }

func (f *Flash) retireEntry(i uint32) {
	l := &f.rcu.limbo[f.rcu.epoch.Load()&1]
	l.entries = append(l.entries, i)
}

func (f *Flash) retireBlock(off uint32, class int) {
	l := &f.rcu.limbo[f.rcu.epoch.Load()&1]
	l.blocks = append(l.blocks, retiredBlock{off, class})
}

// retireSlot drops slot's worker; the slot number is reused only after
// the lookups that may still name it have returned.
func (f *Flash) retireSlot(slot uint32) {
	f.slots.retire(slot)
	l := &f.rcu.limbo[f.rcu.epoch.Load()&1]
	l.slots = append(l.slots, slot)
	f.publish()
}

// quiesce advances the epoch when no lookup of the previous one is left,
// and recycles what was retired in it (writers, at the end of a write
// hold). It never waits.
func (f *Flash) quiesce() {
	r := &f.rcu
	e := r.epoch.Load()
	prev := &r.limbo[(e+1)&1]
	if prev.empty() && r.limbo[e&1].empty() {
		return
	}
	if r.active[(e+1)&1].n.Load() != 0 {
		return
	}
	// newEntry rewrites a retired entry (it may keep its last set word).
	f.free = append(f.free, prev.entries...)
	for _, b := range prev.blocks {
		f.freeBlock(b.off, b.class)
	}
	slots := len(prev.slots) > 0
	for _, s := range prev.slots {
		f.slots.recycle(s) // the view keeps its name: no lookup reads it
	}
	prev.entries, prev.blocks, prev.slots = prev.entries[:0], prev.blocks[:0], prev.slots[:0]
	r.epoch.Store(e + 1)
	if slots {
		f.publish() // the ordered flag
	}
}

// checkView verifies that the published view is f's arrays (invariant
// checks): an array replaced without publish would leave lookups reading
// stale ids or members, and a wrong name would credit another worker.
func (f *Flash) checkView() error {
	v := f.view.Load()
	switch {
	case len(v.ids) != len(f.m.slots) ||
		len(v.ids) > 0 && &v.ids[0] != &f.m.slots[0]:
		return fmt.Errorf("flash: the view's id table is not the writers'")
	case len(v.chunks) != cap(f.chunks) ||
		len(v.chunks) > 0 && &v.chunks[0] != &f.chunks[:1][0]:
		return fmt.Errorf("flash: the view's chunks are not the writers'")
	case len(v.arena) != cap(f.arena) ||
		len(v.arena) > 0 && &v.arena[0] != &f.arena[:1][0]:
		return fmt.Errorf("flash: the view's arena is not the writers'")
	case v.ordered && (!f.slots.ordered || f.rcu.pendingSlots() > 0):
		return fmt.Errorf("flash: the view claims worker order")
	}
	for slot, used := range f.slots.used {
		if used && (slot >= len(v.names) || v.names[slot] != f.slots.names[slot]) {
			return fmt.Errorf("flash: the view names slot %d wrongly", slot)
		}
	}
	return nil
}
