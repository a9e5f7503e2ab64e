package indexer

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/kvrouter/kvrouter/kvevents"
)

// invariantsLimit bounds the index size up to which invariant builds run
// the O(n) self-check after every mutation, so that large replays under
// -tags invariants stay usable.
const invariantsLimit = 1 << 8

// slotTable maps worker+ranks to dense slots so that worker sets are small
// sorted []uint32-keyed slices. Slots are reused once a worker holds nothing.
type slotTable struct {
	ids   map[kvevents.Worker]uint32
	names []kvevents.Worker // slot -> worker; valid while used[slot]
	used  []bool
	free  []uint32
	// ordered reports that used slots are in worker order, so results
	// built in slot order need no sort check (that check was ~10% of a
	// 64-block lookup over 64 workers). Recomputed, O(slots), when a
	// worker is added or dropped, which is rare next to lookups.
	ordered bool
}

// checkOrdered verifies that the ordered flag is not wrongly set
// (invariant checks; a false flag only costs a sort check).
func (s *slotTable) checkOrdered() error {
	if s.ordered && !s.inOrder() {
		return fmt.Errorf("indexer: slot table claims worker order, slots are not")
	}
	return nil
}

func (s *slotTable) updateOrdered() { s.ordered = s.inOrder() }

// inOrder reports whether the used slots are in worker order.
func (s *slotTable) inOrder() bool {
	var prev kvevents.Worker
	seen := false
	for i, w := range s.names {
		if !s.used[i] {
			continue
		}
		if seen && prev.Compare(w) >= 0 {
			return false
		}
		prev, seen = w, true
	}
	return true
}

func (s *slotTable) lookup(w kvevents.Worker) (uint32, bool) {
	slot, ok := s.ids[w]
	return slot, ok
}

func (s *slotTable) acquire(w kvevents.Worker) uint32 {
	if slot, ok := s.ids[w]; ok {
		return slot
	}
	if s.ids == nil {
		s.ids = make(map[kvevents.Worker]uint32)
	}
	var slot uint32
	if n := len(s.free); n > 0 {
		// Reuse the lowest free slot: keeps slots dense and, for workers
		// registered in order, keeps slot order equal to worker order so
		// FindMatches' final sort is a linear scan.
		i := 0
		for j, f := range s.free {
			if f < s.free[i] {
				i = j
			}
		}
		slot = s.free[i]
		s.free[i] = s.free[n-1]
		s.free = s.free[:n-1]
		s.names[slot] = w
		s.used[slot] = true
	} else {
		slot = uint32(len(s.names))
		s.names = append(s.names, w)
		s.used = append(s.used, true)
	}
	s.ids[w] = slot
	s.updateOrdered()
	return slot
}

func (s *slotTable) release(slot uint32) {
	s.retire(slot)
	s.recycle(slot)
}

// retire drops slot's worker but keeps its name and does not reuse the
// slot until recycle (Flash's lock-free lookups may still name it).
func (s *slotTable) retire(slot uint32) {
	delete(s.ids, s.names[slot])
	s.used[slot] = false
	s.updateOrdered()
}

// recycle makes a retired slot reusable.
func (s *slotTable) recycle(slot uint32) {
	s.names[slot] = kvevents.Worker{}
	s.free = append(s.free, slot)
}

// sorted returns the used slots ordered by worker.
func (s *slotTable) sorted() []uint32 {
	out := make([]uint32, 0, len(s.ids))
	for _, slot := range s.ids {
		out = append(out, slot)
	}
	slices.SortFunc(out, func(a, b uint32) int { return s.names[a].Compare(s.names[b]) })
	return out
}

// ranksOf returns the slots of every rank of worker id.
func (s *slotTable) ranksOf(id uint64) []uint32 {
	var out []uint32
	for w, slot := range s.ids {
		if w.ID == id {
			out = append(out, slot)
		}
	}
	slices.Sort(out)
	return out
}

func cmpOverlap(a, b Overlap) int { return a.Worker.Compare(b.Worker) }

// sortOverlaps sorts o by worker; slots usually follow worker order, so the
// check first makes the common case linear.
func sortOverlaps(o Overlaps) {
	if !slices.IsSortedFunc(o, cmpOverlap) {
		slices.SortFunc(o, cmpOverlap)
	}
}

// mapBytes estimates the memory of Go maps holding n entries of kv bytes
// in total: swiss-table slots hold key+value plus one control byte, at a
// load factor between 7/16 and 7/8 (taken as 5/8), and a map with at most
// 8 entries is one whole group plus its header (~200 bytes); this counts
// the entries only, callers add per-map overheads.
func mapBytes(n int, kv uintptr) int64 { return int64(n) * int64(kv+1) * 8 / 5 }

const ptrSize = unsafe.Sizeof(uintptr(0))

// dumpBlock is one held block of one worker, as Dump sees it.
type dumpBlock struct {
	hash      uint64
	parent    uint64
	hasParent bool
	local     uint64
}

// dumpWorker appends the canonical Stored events that rebuild blocks (one
// worker's prefix-closed set, or one KV cache group's blocks): a pre-order
// walk from the blocks whose parent is not in blocks, with children in
// engine-hash order, one event per maximal single-child chain. Radix,
// Flash and Groups share it so that their dumps are byte-identical.
func dumpWorker(dst []kvevents.Event, w kvevents.Worker, blocks []dumpBlock) []kvevents.Event {
	slices.SortFunc(blocks, func(a, b dumpBlock) int { return cmp.Compare(a.hash, b.hash) })
	children := make(map[uint64][]int, len(blocks))
	var roots []int
	for i, b := range blocks {
		if b.hasParent && heldIn(blocks, b.parent) {
			children[b.parent] = append(children[b.parent], i)
		} else {
			roots = append(roots, i)
		}
	}
	var walk func(start int)
	walk = func(start int) {
		b := blocks[start]
		ev := kvevents.Event{
			WorkerID: w.ID, DPRank: w.Rank, Kind: kvevents.KindStored,
			HasParent: b.hasParent, Parent: b.parent,
		}
		cur := start
		for {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: blocks[cur].hash, Local: blocks[cur].local})
			kids := children[blocks[cur].hash]
			if len(kids) != 1 {
				dst = append(dst, ev)
				for _, k := range kids {
					walk(k)
				}
				return
			}
			cur = kids[0]
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return dst
}

// heldIn reports whether blocks (sorted by hash) hold hash.
func heldIn(blocks []dumpBlock, hash uint64) bool {
	_, ok := slices.BinarySearchFunc(blocks, hash, func(b dumpBlock, h uint64) int { return cmp.Compare(b.hash, h) })
	return ok
}

// mutator is the write side shared by Radix and Flash; applyEvent
// dispatches one event to it. Called with the index's write lock held.
type mutator interface {
	store(ev *kvevents.Event) error
	remove(ev *kvevents.Event)
	clearWorker(w kvevents.Worker)
	maybeCheck()
}

// applyCounters counts applied and rejected events of one index.
type applyCounters struct{ applied, rejected uint64 }

// applyEvent applies ev to m by kind, counting it, and wraps a rejection
// with the event's kind and worker. A rejected event changed nothing.
func (c *applyCounters) applyEvent(m mutator, ev *kvevents.Event) error {
	var err error
	switch ev.Kind {
	case kvevents.KindStored, kvevents.KindRemoved:
		if ev.Group.Kind != kvevents.GroupFull {
			// A plain index holds the full-attention group only: filing a
			// sliding or state group's blocks as full attention would
			// credit prefixes the worker cannot reuse (DESIGN.md §13).
			// Groups takes these events.
			err = fmt.Errorf("%s: %w", ev.Group, ErrGroupEvent)
			break
		}
		if ev.Kind == kvevents.KindRemoved {
			m.remove(ev)
		} else {
			err = m.store(ev)
		}
	case kvevents.KindCleared:
		m.clearWorker(ev.Worker())
	default:
		err = fmt.Errorf("kind %d: %w", ev.Kind, ErrBadEvent)
	}
	if err != nil {
		c.rejected++
		return wrapApply(ev, err)
	}
	c.applied++
	m.maybeCheck()
	return nil
}

func wrapApply(ev *kvevents.Event, err error) error {
	return fmt.Errorf("indexer: apply %s from worker %s: %w", ev.Kind, ev.Worker(), err)
}

// FindMatches' scratch "alive": the out indexes of the workers still
// matching, in slot order (see markLost). Lookups whose first block has at
// most aliveStack holders use a stack array; larger ones a pooled slice, so
// AppendMatches stays allocation-free in steady state.
const aliveStack = 128

var alivePool = sync.Pool{New: func() any { return new([]uint32) }}

// initAlive returns alive = [0, n) and the pooled slice to hand back to
// putAlive (nil when the stack array was used).
func initAlive(stack *[aliveStack]uint32, n int) (alive []uint32, pooled *[]uint32) {
	if n <= aliveStack {
		alive = stack[:n]
	} else {
		pooled = alivePool.Get().(*[]uint32)
		if cap(*pooled) < n {
			*pooled = make([]uint32, n)
		}
		alive = (*pooled)[:n]
	}
	for i := range alive {
		alive[i] = uint32(i)
	}
	return alive, pooled
}

func putAlive(pooled *[]uint32) {
	if pooled != nil {
		alivePool.Put(pooled)
	}
}

var (
	_ mutator = (*Radix)(nil)
	_ mutator = (*Flash)(nil)
)
