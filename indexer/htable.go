package indexer

import "iter"

// htable is a worker's table engine hash -> node/entry index (Radix,
// Flash): open addressing with linear probing over parallel key and value
// arrays (12 bytes a slot, against 16 + 1 control byte in a
// map[uint64]uint32), load factor at most 3/4, deletion by backward shift
// (no tombstones). vals[i] == noEntry marks an empty slot. A nil *htable
// is an empty table for get and len.
//
// Measured (BenchmarkBytesPerBlock shape=unique, 64 workers x 1024
// blocks): flash 84 -> 72 and radix 93 -> 81 heap bytes per block against
// map[uint64]uint32; BenchmarkStoreRemove no slower.
type htable struct {
	keys  []uint64
	vals  []uint32
	n     int
	shift uint // 64 - log2(len(keys))
}

func newHtable(hint int) *htable {
	t := &htable{}
	t.resize(max(8, hint*4/3+1))
	return t
}

// resize rehashes into the smallest power of two >= size slots.
func (t *htable) resize(size int) {
	s := 8
	for s < size {
		s *= 2
	}
	oldK, oldV := t.keys, t.vals
	t.keys, t.vals = make([]uint64, s), make([]uint32, s)
	for i := range t.vals {
		t.vals[i] = noEntry
	}
	t.shift = uint(64 - bitsLen(s-1))
	for i, v := range oldV {
		if v != noEntry {
			t.insert(oldK[i], v)
		}
	}
}

func (t *htable) home(k uint64) int { return int((k * pidK1) >> t.shift) }

func (t *htable) insert(k uint64, v uint32) {
	mask := len(t.keys) - 1
	i := t.home(k)
	for t.vals[i] != noEntry {
		i = (i + 1) & mask
	}
	t.keys[i], t.vals[i] = k, v
}

// slot returns the slot holding k, or -1.
func (t *htable) slot(k uint64) int {
	if t == nil || t.n == 0 {
		return -1
	}
	mask := len(t.keys) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		if t.vals[i] == noEntry {
			return -1
		}
		if t.keys[i] == k {
			return i
		}
	}
}

func (t *htable) get(k uint64) (uint32, bool) {
	if i := t.slot(k); i >= 0 {
		return t.vals[i], true
	}
	return 0, false
}

// put sets k -> v (v != noEntry).
func (t *htable) put(k uint64, v uint32) {
	if i := t.slot(k); i >= 0 {
		t.vals[i] = v
		return
	}
	if 4*(t.n+1) > 3*len(t.keys) {
		t.resize(2 * len(t.keys))
	}
	t.insert(k, v)
	t.n++
}

// del removes k if present.
func (t *htable) del(k uint64) {
	i := t.slot(k)
	if i < 0 {
		return
	}
	mask := len(t.keys) - 1
	for j := (i + 1) & mask; t.vals[j] != noEntry; j = (j + 1) & mask {
		h := t.home(t.keys[j])
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.vals[i] = noEntry
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
		for i, v := range t.vals {
			if v != noEntry && !yield(t.keys[i], v) {
				return
			}
		}
	}
}

func (t *htable) bytes() int64 { return int64(len(t.keys)) * 12 }
