package indexer

import (
	"iter"
	"math/bits"
)

// htable is a worker's table engine hash -> node/entry index (Radix,
// Flash): open addressing with linear probing over 12-byte slots (key
// halves and value side by side, so that a probe touches one cache line
// where parallel key and value arrays touched two), load factor at most
// 3/4, deletion by backward shift (no tombstones). v == noEntry marks an
// empty slot. A nil *htable is an empty table for get and len.
//
// Measured (BenchmarkBytesPerBlock shape=unique, 64 workers x 1024
// blocks): flash 84 -> 72 and radix 93 -> 81 heap bytes per block against
// map[uint64]uint32; BenchmarkStoreRemove no slower. Interleaving the
// slots (same 12 bytes) cut htable probes from 13% to ~5% of the CPU of a
// full conversation-trace replay, where the 64 tables (~24 MB) miss cache.
//
// The table has any number of slots (a probe starts at the high half of
// hash x len, "fastrange", instead of at the hash's top bits), so a table
// sized by a hint or a first event is 4/3 of it, not the next power of two
// above that, and a full table grows by half (load 1/2 to 3/4, against
// 3/8 to 3/4 by doubling): BenchmarkBytesPerBlock shape=unique
// (1024-block tables) 24 -> 16 bytes of table per block, shape=shared
// (tables that outgrow their first event) the same 24.
type htable struct {
	s []hslot
	n int
}

// hslot is one slot: key k = uint64(hi)<<32 | lo, value v.
type hslot struct{ lo, hi, v uint32 }

func (e *hslot) key() uint64 { return uint64(e.hi)<<32 | uint64(e.lo) }

func newHtable(hint int) *htable {
	t := &htable{}
	t.resize(max(8, hint*4/3+1))
	return t
}

// resize rehashes into max(8, size) slots.
func (t *htable) resize(size int) {
	old := t.s
	t.s = make([]hslot, max(8, size))
	for i := range t.s {
		t.s[i].v = noEntry
	}
	for i := range old {
		if old[i].v != noEntry {
			t.insert(old[i].key(), old[i].v)
		}
	}
}

func (t *htable) home(k uint64) int {
	hi, _ := bits.Mul64(k*pidK1, uint64(len(t.s)))
	return int(hi)
}

// next is the slot after i, cyclically.
func (t *htable) next(i int) int {
	if i++; i == len(t.s) {
		return 0
	}
	return i
}

func (t *htable) insert(k uint64, v uint32) {
	i := t.home(k)
	for t.s[i].v != noEntry {
		i = t.next(i)
	}
	t.s[i] = hslot{lo: uint32(k), hi: uint32(k >> 32), v: v}
}

// find returns the slot holding k and true, or the empty slot where k
// would be inserted and false (-1 for a nil or empty-capacity table).
func (t *htable) find(k uint64) (int, bool) {
	if t == nil || len(t.s) == 0 {
		return -1, false
	}
	lo, hi := uint32(k), uint32(k>>32)
	for i := t.home(k); ; i = t.next(i) {
		e := &t.s[i]
		if e.v == noEntry {
			return i, false
		}
		if e.lo == lo && e.hi == hi {
			return i, true
		}
	}
}

// slot returns the slot holding k, or -1.
func (t *htable) slot(k uint64) int {
	if t == nil || t.n == 0 {
		return -1
	}
	if i, ok := t.find(k); ok {
		return i
	}
	return -1
}

func (t *htable) get(k uint64) (uint32, bool) {
	if i := t.slot(k); i >= 0 {
		return t.s[i].v, true
	}
	return 0, false
}

// put sets k -> v (v != noEntry).
func (t *htable) put(k uint64, v uint32) {
	i, ok := t.find(k)
	if ok {
		t.s[i].v = v
		return
	}
	t.putAt(i, k, v)
}

// putAt inserts absent k -> v (v != noEntry) at i, the empty slot find
// returned for k with no change to the table since.
func (t *htable) putAt(i int, k uint64, v uint32) {
	if i < 0 || 4*(t.n+1) > 3*len(t.s) {
		t.resize(len(t.s) + len(t.s)/2) // load 1/2 after, 3/4 at most
		t.insert(k, v)
	} else {
		t.s[i] = hslot{lo: uint32(k), hi: uint32(k >> 32), v: v}
	}
	t.n++
}

// del removes k if present.
func (t *htable) del(k uint64) {
	if i := t.slot(k); i >= 0 {
		t.delAt(i)
	}
}

// delAt empties slot i (which holds a key).
func (t *htable) delAt(i int) {
	for j := t.next(i); t.s[j].v != noEntry; j = t.next(j) {
		h := t.home(t.s[j].key())
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.s[i] = t.s[j]
			i = j
		}
	}
	t.s[i].v = noEntry
	t.n--
}

func (t *htable) len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// all iterates the pairs in slot order. The table must not change during
// the iteration.
func (t *htable) all() iter.Seq2[uint64, uint32] {
	return func(yield func(uint64, uint32) bool) {
		for i := range t.s {
			if e := &t.s[i]; e.v != noEntry && !yield(e.key(), e.v) {
				return
			}
		}
	}
}

func (t *htable) bytes() int64 { return int64(len(t.s)) * 12 }
