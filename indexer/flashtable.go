package indexer

import (
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
// tag makes a probe touch the entry only on a likely hit. The load factor,
// tombstones included, stays at most 1/2 (3/4 before: shorter probe runs
// made the events phase of BenchmarkReplay ~8% faster, e.g. 239 -> 208 ms
// and 509 -> 456 ms in alternated runs on the shared machine, together
// with FlashConfig.BlocksPerWorker).
//
// Deletion leaves a tombstone (a slot whose index bits are 0), unless it
// empties the end of a run; a later insert reuses it, and a table too full
// of them is rebuilt. Lookups probe
// without a lock (flashrcu.go): a deletion that shifted the rest of the
// run back, as before, could move a slot behind a probe passing by.
//
// Measured (BenchmarkBytesPerBlock shape=unique, 65536 single-holder
// entries): 112 -> 92 heap bytes per block against map[uint64]uint32;
// lookups were no slower (BenchmarkFindMatches).
type ptable struct {
	slots []uint64
	n     int  // live ids
	tomb  int  // tombstones
	shift uint // 64 - log2(len(slots))
}

// ptomb is a deleted slot: nonzero, index bits 0.
const ptomb = uint64(0xffffffff) << 32

// home is the first slot probed for a slot word or id: it depends on the
// 32-bit tag only, so that growth rehashes slots without loading their
// entries (a cache miss each on a large table). The tag's top bits are the
// high bits of a product (prefixID) or of xxh3 (position 0), so mixing it
// once more spreads it evenly.
func (t *ptable) home(w uint64) uint64 { return ((w >> 32) * pidK2) >> t.shift }

func ptag(seq uint64) uint64 { return seq >> 32 << 32 }

// get returns the index of the entry with id seq (writers).
func (f *Flash) get(seq uint64) (uint32, bool) {
	t := &f.m
	if t.n == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	tag := ptag(seq)
	for i := t.home(seq); ; i = (i + 1) & mask {
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

// put adds id seq (absent) -> entry idx; f.at(idx).seq must be seq.
func (f *Flash) put(seq uint64, idx uint32) {
	t := &f.m
	if 2*(t.n+t.tomb+1) > len(t.slots) {
		f.grow()
	}
	mask := uint64(len(t.slots) - 1)
	i := t.home(seq)
	for ; t.slots[i] != 0 && uint32(t.slots[i]) != 0; i = (i + 1) & mask {
	}
	if t.slots[i] != 0 {
		t.tomb--
	}
	atomic.StoreUint64(&t.slots[i], ptag(seq)|uint64(idx)+1)
	t.n++
}

// insert puts slot word w into a table no lookup reads yet (rehash).
func (t *ptable) insert(w uint64) {
	mask := uint64(len(t.slots) - 1)
	i := t.home(w)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = w
}

// grow makes room for one more id: doubles the table, or only drops the
// tombstones when live ids fill at most a quarter of it.
func (f *Flash) grow() {
	size := max(16, len(f.m.slots))
	if 4*(f.m.n+1) > size {
		size *= 2
	}
	f.rehash(size)
}

// reserve sizes the id table for n entries at load 1/2. store calls it
// with workers x FlashConfig.BlocksPerWorker when it meets a new worker: the
// bound on the entries the workers seen so far can hold, so the table
// costs at most 16 bytes per (worker, hinted block), as the worker
// tables do. Workers appear early in a stream, so the table then grows
// while it is nearly empty instead of rehashing a million ids in the
// middle of the stream (each doubling reinserts all, a cache miss each).
// Measured (KVROUTER_BENCH_REQUESTS=0 go test -run '^$' -bench
// 'Replay/index=flash/phase=events' -benchtime 5x ./internal/benchindex,
// alternated with the build before): 344, 329 -> 318, 318 ms per replay;
// the grow path had been ~4% of the CPU.
func (f *Flash) reserve(n int) {
	if size := 2 * n; size > len(f.m.slots) {
		s := 16
		for s < size {
			s *= 2
		}
		f.rehash(s)
	}
}

// rehash moves the id table to a new array of size (a power of two)
// slots, without tombstones, and publishes it; lookups still reading the
// old array see the ids as they were. The array is advised as huge pages
// (adviseHuge: 16 MiB on the full conversation trace, where nearly every
// probe used to miss the TLB). The hint takes effect on memory fresh from
// the OS, as a long-lived index's table is; memory the Go heap reuses
// keeps its 4 KiB pages. Measured (same benchmark with -benchtime 1x, one
// replay per process, alternated with the build before): 439, 410, 343,
// 361, 352 -> 398, 326, 302, 324, 317 ms (-12%); with -benchtime 5x, 262,
// 255 -> 247, 237 ms.
func (f *Flash) rehash(size int) {
	t := &f.m
	old := t.slots
	t.slots = make([]uint64, size)
	adviseHuge(unsafe.Pointer(&t.slots[0]), uintptr(size)*8)
	t.shift = uint(64 - bitsLen(size-1))
	for _, s := range old {
		if uint32(s) != 0 {
			t.insert(s)
		}
	}
	t.tomb = 0
	f.publish()
}

func bitsLen(x int) int {
	n := 0
	for ; x > 0; x >>= 1 {
		n++
	}
	return n
}

// del removes id seq, which maps to entry idx. It finds the slot by its
// whole word (tag and index), so it never loads an entry.
func (f *Flash) del(seq uint64, idx uint32) {
	t := &f.m
	mask := uint64(len(t.slots) - 1)
	want := ptag(seq) | uint64(idx) + 1
	i := t.home(seq)
	for t.slots[i] != want {
		i = (i + 1) & mask
	}
	t.n--
	if t.slots[(i+1)&mask] != 0 {
		atomic.StoreUint64(&t.slots[i], ptomb)
		t.tomb++
		return
	}
	// The last slot of its run: no probe passes it, so it can be empty,
	// and so can the tombstones right before it (most deletions leave no
	// tombstone at load 1/2, and rebuilds for tombstones are rare).
	atomic.StoreUint64(&t.slots[i], 0)
	for j := (i - 1) & mask; t.slots[j] == ptomb; j = (j - 1) & mask {
		atomic.StoreUint64(&t.slots[j], 0)
		t.tomb--
	}
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
