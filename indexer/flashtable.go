package indexer

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// hugeSize is the huge-page size adviseHuge aims at (2 MiB: x86-64 and
// arm64 with 4 KiB base pages).
const hugeSize = 2 << 20

// hugeRange returns the largest run of whole, aligned huge pages inside
// the n bytes at address p, as an offset from p and a size (0 when there
// is none).
func hugeRange(p, n uintptr) (off, size uintptr) {
	off = (hugeSize - p%hugeSize) % hugeSize
	if n < off+hugeSize {
		return 0, 0
	}
	return off, (n - off) &^ (hugeSize - 1)
}

// ptable is Flash's map prefix id -> entry index: open addressing with
// linear probing over 8-byte slots holding (id>>32)<<32 | index+1 (0 =
// empty). The key itself lives in the entry (fentry.seq), so a slot is 8
// bytes against 16 + 1 control byte for a map[uint64]uint32; the 32-bit
// tag makes a probe touch the entry only on a likely hit.
//
// The table has any number of slots (a probe starts at the high half of
// the mixed tag x len, "fastrange", as htable's do), its load factor,
// tombstones included, stays at most 3/4, and a full table grows by a
// quarter (load 3/5 after). Before: a power of two at load at most 1/2,
// doubling, so 8/load bytes per id ran from 16 to 32 (23 on average over a
// growth cycle) where they now run from ~10.7 to ~13.3 (12 on average). Slots are 8 to a
// cache line and the tag spares entry loads, so the longer probes of a
// fuller table stay mostly within the line the first probe loaded.
// Measured (BenchmarkBytesPerBlock, flash heap bytes per block): unique
// 54.1 -> 52.6, unique-sweep 62.8 -> 53.9 (with growth by half; see
// htable for growth by a quarter).
//
// Deletion leaves a tombstone (a slot whose index bits are 0), unless it
// empties the end of a run; a later insert reuses it, and a table too full
// of them is rebuilt. Lookups probe
// without a lock (flashrcu.go): a deletion that shifted the rest of the
// run back, as before, could move a slot behind a probe passing by.
type ptable struct {
	slots []uint64
	n     int // live ids
	tomb  int // tombstones
}

// ptomb is a deleted slot: nonzero, index bits 0.
const ptomb = uint64(0xffffffff) << 32

// pHome is the first of n slots probed for a slot word or id: it depends
// on the 32-bit tag only, so that growth rehashes slots without loading
// their entries (a cache miss each on a large table). The tag's top bits
// are the high bits of a product (prefixID) or of xxh3 (position 0), so
// mixing it once more spreads it evenly. Lookups (flashread.go) use it
// with their view's length.
func pHome(w uint64, n int) uint64 {
	hi, _ := bits.Mul64((w>>32)*pidK2, uint64(n))
	return hi
}

func (t *ptable) home(w uint64) uint64 { return pHome(w, len(t.slots)) }

// pNext is the slot after i of n, cyclically.
func pNext(i uint64, n int) uint64 {
	if i++; i == uint64(n) {
		return 0
	}
	return i
}

func (t *ptable) next(i uint64) uint64 { return pNext(i, len(t.slots)) }

func ptag(seq uint64) uint64 { return seq >> 32 << 32 }

// get returns the index of the entry with id seq (writers).
func (f *Flash) get(seq uint64) (uint32, bool) {
	t := &f.m
	if t.n == 0 {
		return 0, false
	}
	tag := ptag(seq)
	for i := t.home(seq); ; i = t.next(i) {
		s := t.slots[i]
		if s == 0 {
			return 0, false
		}
		if s&^0xffffffff == tag && uint32(s) != 0 {
			if idx := uint32(s) - 1; f.at(idx).seq == seq {
				return idx, true
			}
		}
	}
}

// probe is get for a store: when seq is absent it also returns the slot
// put would take (the first tombstone or empty slot of seq's probe), so
// that putAt need not walk the run again (see putAt).
func (f *Flash) probe(seq uint64) (idx uint32, ok bool, ins int) {
	t := &f.m
	ins = -1
	if len(t.slots) == 0 {
		return 0, false, ins
	}
	tag := ptag(seq)
	for i := t.home(seq); ; i = t.next(i) {
		s := t.slots[i]
		if s == 0 {
			if ins < 0 {
				ins = int(i)
			}
			return 0, false, ins
		}
		if uint32(s) == 0 { // tombstone
			if ins < 0 {
				ins = int(i)
			}
			continue
		}
		if s&^0xffffffff == tag {
			if idx := uint32(s) - 1; f.at(idx).seq == seq {
				return idx, true, ins
			}
		}
	}
}

// putAt is put at slot ins, which probe returned for seq with no change
// to the table since (or -1). It grows the table when put would.
// Measured (BenchmarkStoreRemove flash, where every stored block is a new
// id; instructions counted by valgrind --tool=callgrind): 747 -> 739 per
// block op; time within that machine's noise.
func (f *Flash) putAt(ins int, seq uint64, idx uint32) {
	t := &f.m
	if ins < 0 || 4*(t.n+t.tomb+1) > 3*len(t.slots) {
		f.put(seq, idx)
		return
	}
	if t.slots[ins] != 0 {
		t.tomb--
	}
	atomic.StoreUint64(&t.slots[ins], ptag(seq)|uint64(idx)+1)
	t.n++
}

// put adds id seq (absent) -> entry idx; f.at(idx).seq must be seq.
func (f *Flash) put(seq uint64, idx uint32) {
	t := &f.m
	if 4*(t.n+t.tomb+1) > 3*len(t.slots) {
		f.grow()
	}
	i := t.home(seq)
	for ; t.slots[i] != 0 && uint32(t.slots[i]) != 0; i = t.next(i) {
	}
	if t.slots[i] != 0 {
		t.tomb--
	}
	atomic.StoreUint64(&t.slots[i], ptag(seq)|uint64(idx)+1)
	t.n++
}

// insert puts slot word w into a table no lookup reads yet (rehash).
func (t *ptable) insert(w uint64) {
	i := t.home(w)
	for t.slots[i] != 0 {
		i = t.next(i)
	}
	t.slots[i] = w
}

// grow makes room for one more id: grows the table by a quarter, or only
// drops the tombstones when live ids fill at most half of it.
func (f *Flash) grow() {
	size := max(16, len(f.m.slots))
	if 2*(f.m.n+1) > size {
		size += size / 4
	}
	f.rehash(size)
}

// reserve sizes the id table for n entries at load 3/4. store calls it
// with workers x FlashConfig.BlocksPerWorker when it meets a new worker: the
// bound on the entries the workers seen so far can hold, so the table
// costs at most ~10.7 bytes per (worker, hinted block). Workers appear
// early in a stream, so the table then grows while it is nearly empty
// instead of rehashing a million ids in the middle of the stream (each
// growth reinserts all, a cache miss each).
// Measured (KVROUTER_BENCH_REQUESTS=0 go test -run '^$' -bench
// 'Replay/index=flash/phase=events' -benchtime 5x ./internal/benchindex,
// alternated with the build before): 344, 329 -> 318, 318 ms per replay;
// the grow path had been ~4% of the CPU.
//
// A reserve that must grow grows by at least a quarter, as grow does:
// sized exactly, every new worker rebuilt the table (66 rebuilds of up to
// 5.6 MB per replay of the conversation trace, 27% of the apply CPU).
func (f *Flash) reserve(n int) {
	if size := n*4/3 + 1; size > len(f.m.slots) {
		f.rehash(max(16, size, len(f.m.slots)+len(f.m.slots)/4))
	}
}

// rehash moves the id table to a new array of size slots, without
// tombstones, and publishes it; lookups still reading the old array see
// the ids as they were. The array is advised as huge pages (adviseHuge:
// 16 MiB on the full conversation trace, where nearly every probe used to
// miss the TLB). The hint takes effect on memory fresh from the OS, as a
// long-lived index's table is; memory the Go heap reuses keeps its 4 KiB
// pages. Measured (same benchmark with -benchtime 1x, one replay per
// process, alternated with the build before): 439, 410, 343, 361, 352 ->
// 398, 326, 302, 324, 317 ms (-12%); with -benchtime 5x, 262, 255 -> 247,
// 237 ms.
func (f *Flash) rehash(size int) {
	t := &f.m
	old := t.slots
	t.slots = make([]uint64, size)
	adviseHuge(unsafe.Pointer(&t.slots[0]), uintptr(size)*8)
	for _, s := range old {
		if uint32(s) != 0 {
			t.insert(s)
		}
	}
	t.tomb = 0
	f.publish()
}

// del removes id seq, which maps to entry idx. It finds the slot by its
// whole word (tag and index), so it never loads an entry.
func (f *Flash) del(seq uint64, idx uint32) {
	t := &f.m
	want := ptag(seq) | uint64(idx) + 1
	i := t.home(seq)
	for t.slots[i] != want {
		i = t.next(i)
	}
	t.n--
	if t.passed(i) {
		atomic.StoreUint64(&t.slots[i], ptomb)
		t.tomb++
		return
	}
	// No probe for an id of the table passes the slot, so it can be empty,
	// and so can the tombstones right before it (an id after them whose
	// probe passed one would pass i too).
	atomic.StoreUint64(&t.slots[i], 0)
	for j := t.prev(i); t.slots[j] == ptomb; j = t.prev(j) {
		atomic.StoreUint64(&t.slots[j], 0)
		t.tomb--
	}
}

// passed reports whether the probe for some id after slot i in its run
// passes i (the id's home is at or before i), so that i must not be
// empty. The run goes on through tombstones, which no probe looks for.
// Homes depend on the slot words alone, so this loads no entry. Measured
// (BenchmarkStoreRemove, where every store and removal creates and frees
// entries): against a tombstone whenever the next slot is taken, the
// rebuilds for tombstones stopped (62 -> 0 heap bytes allocated per op).
func (t *ptable) passed(i uint64) bool {
	n := uint64(len(t.slots))
	for j := t.next(i); t.slots[j] != 0; j = t.next(j) {
		s := t.slots[j]
		if uint32(s) == 0 {
			continue
		}
		h := t.home(s)
		di, dj := i-h, j-h // distances from h, cyclically
		if i < h {
			di += n
		}
		if j < h {
			dj += n
		}
		if di < dj {
			return true
		}
	}
	return false
}

// prev is the slot before i, cyclically.
func (t *ptable) prev(i uint64) uint64 {
	if i == 0 {
		return uint64(len(t.slots) - 1)
	}
	return i - 1
}

// each calls fn for every (id, entry index) pair.
func (f *Flash) each(fn func(seq uint64, idx uint32) bool) {
	for _, s := range f.m.slots {
		if uint32(s) != 0 {
			idx := uint32(s) - 1
			if !fn(f.at(idx).seq, idx) {
				return
			}
		}
	}
}
