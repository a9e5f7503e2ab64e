package indexer

import "unsafe"

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
// tag makes a probe touch the entry only on a likely hit. The load factor
// stays at most 1/2 (3/4 before: shorter probe runs for get, insert and
// the backward-shift delete made the events phase of BenchmarkReplay
// ~8% faster, e.g. 239 -> 208 ms and 509 -> 456 ms in alternated runs on
// the shared machine, together with FlashConfig.BlocksPerWorker). Deletion shifts the following run back (no
// tombstones).
//
// Measured (BenchmarkBytesPerBlock shape=unique, 65536 single-holder
// entries): 112 -> 92 heap bytes per block against map[uint64]uint32;
// lookups were no slower (BenchmarkFindMatches).
type ptable struct {
	slots []uint64
	n     int
	shift uint // 64 - log2(len(slots))
}

// home is the first slot probed for a slot word or id: it depends on the
// 32-bit tag only, so that deletion and growth rehash slots without
// loading their entries (a cache miss each on a large table: walking the
// run after a deleted slot that way was 17% of the CPU of a full trace
// replay). The tag's top bits are the high bits of a product (prefixID) or
// of xxh3 (position 0), so mixing it once more spreads it evenly.
func (t *ptable) home(w uint64) uint64 { return ((w >> 32) * pidK2) >> t.shift }

func ptag(seq uint64) uint64 { return seq >> 32 << 32 }

// get returns the index of the entry with id seq.
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
		if s&^0xffffffff == tag {
			if idx := uint32(s) - 1; f.at(idx).seq == seq {
				return idx, true
			}
		}
	}
}

// put adds id seq (absent) -> entry idx; f.at(idx).seq must be seq.
func (f *Flash) put(seq uint64, idx uint32) {
	t := &f.m
	if 2*(t.n+1) > len(t.slots) {
		f.grow()
	}
	t.insert(seq, uint64(idx)+1)
	t.n++
}

func (t *ptable) insert(seq, v uint64) {
	mask := uint64(len(t.slots) - 1)
	i := t.home(seq)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = ptag(seq) | v
}

func (f *Flash) grow() { f.rehash(max(16, 2*len(f.m.slots))) }

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

// rehash moves the id table to size (a power of two) slots, advised as
// huge pages (adviseHuge: 16 MiB on the full conversation trace, where
// nearly every probe used to miss the TLB). The hint takes effect on
// memory fresh from the OS, as a long-lived index's table is; memory the
// Go heap reuses keeps its 4 KiB pages. Measured (same benchmark with
// -benchtime 1x, one replay per process, alternated with the build
// before): 439, 410, 343, 361, 352 -> 398, 326, 302, 324, 317 ms (-12%);
// with -benchtime 5x, 262, 255 -> 247, 237 ms.
func (f *Flash) rehash(size int) {
	t := &f.m
	old := t.slots
	t.slots = make([]uint64, size)
	adviseHuge(unsafe.Pointer(&t.slots[0]), uintptr(size)*8)
	t.shift = uint(64 - bitsLen(size-1))
	for _, s := range old {
		if s != 0 {
			t.insert(s, uint64(uint32(s)))
		}
	}
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
	// Backward shift: move each later element of the run whose home is
	// not in (i, j] into the hole.
	for j := (i + 1) & mask; t.slots[j] != 0; j = (j + 1) & mask {
		k := t.home(t.slots[j])
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = 0
	t.n--
}

// each calls fn for every (id, entry index) pair.
func (f *Flash) each(fn func(seq uint64, idx uint32) bool) {
	for _, s := range f.m.slots {
		if s != 0 {
			idx := uint32(s) - 1
			if !fn(f.at(idx).seq, idx) {
				return
			}
		}
	}
}
