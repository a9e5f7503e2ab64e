package indexer

import (
	"math/bits"
	"slices"
	"sync/atomic"
)

// Flash's member sets: which worker slots hold an entry.
//
// An entry's set is one word, fentry.mem: 0 for none; 1<<63 | kids<<32 |
// slot for one member, with its child count (so that entries need no
// field of their own for it: 24 bytes, not 32); for n >= 2, the offset of
// a block of the member arena in the low 32 bits, n in bits 32-51 and the
// xor of the members' slots mod 2^10 in bits 52-61 (memSum), or, for a
// set of 2^20 members or more, 1<<62 | n<<32 | offset. Lookups read the
// word once, atomically, without a lock (flashread.go), so a set is
// never changed in place: adding or dropping a member builds a new block
// and swaps the word, and the old block is reused only once no lookup can
// still read it (flashrcu.go). Child counts are the writers' alone and do
// change in place.

const (
	memOne = 1 << 63
	// memBig marks a set of at least 2^memNBits members, whose word has
	// no room for the sum.
	memBig   = 1 << 62
	memNBits = 20
	memNMask = 1<<memNBits - 1
	// memSumBits low bits of each slot are summed (xor) into a set's
	// word: a lookup that sees a set lose one member between two depths
	// finds which one from the two sums, without reading the block
	// (flashbatch.go).
	memSumBits = 10
	memSumMask = 1<<memSumBits - 1
)

// memN is the number of members of set word m.
func memN(m uint64) uint32 {
	if m&memOne != 0 {
		return 1
	}
	h := uint32(m >> 32)
	if m&memBig == 0 {
		return h & memNMask
	}
	return h &^ (memBig >> 32)
}

// memSum returns the xor of the low memSumBits bits of set word m's
// slots; ok is false for a memBig set.
func memSum(m uint64) (x uint32, ok bool) {
	switch {
	case m&memOne != 0:
		return uint32(m) & memSumMask, true
	case m&memBig != 0:
		return 0, false
	}
	return uint32(m>>(32+memNBits)) & memSumMask, true
}

// setWord is the word of the n >= 2 members of the arena block at off,
// whose slots' low bits xor to x (ignored for a memBig set).
func setWord(n, off, x uint32) uint64 {
	if n > memNMask {
		return memBig | uint64(n)<<32 | uint64(off)
	}
	return uint64(x&memSumMask)<<(32+memNBits) | uint64(n)<<32 | uint64(off)
}

// blockSum is the xor of the low memSumBits bits of ms's slots.
func blockSum(ms []fmember) uint32 {
	var x uint32
	for _, m := range ms {
		x ^= m.slot
	}
	return x & memSumMask
}

// setWordAfter is setWord for e's set (n >= 2 members, a valid word)
// changed by one member, slot, to n members at off: the sum moves by
// slot unless the old set had none, which a set only just below 2^20 is
// given from its block.
func (f *Flash) setWordAfter(e *fentry, n, off, slot uint32) uint64 {
	x, ok := memSum(e.mem)
	if !ok && n <= memNMask {
		x = blockSum(f.arena[off : off+n])
		return setWord(n, off, x)
	}
	return setWord(n, off, x^slot)
}

// oneWord is the set word of the single member m (kids < 2^31: a worker
// holds fewer blocks).
func oneWord(m fmember) uint64 { return memOne | uint64(m.kids)<<32 | uint64(m.slot) }

// count is e's number of members (writers; lookups load mem atomically).
func (e *fentry) count() uint32 { return memN(e.mem) }

// setMem publishes e's member set (a store lookups may observe).
func (e *fentry) setMem(m uint64) { atomic.StoreUint64(&e.mem, m) }

// one returns e's single member (n == 1).
func (e *fentry) one() fmember {
	return fmember{slot: uint32(e.mem), kids: uint32(e.mem>>32) &^ (1 << 31)}
}

// kids returns the child count of e's i-th member (writers).
func (f *Flash) kids(e *fentry, i int) uint32 {
	if e.count() == 1 {
		return e.one().kids
	}
	return f.arena[uint32(e.mem)+uint32(i)].kids
}

// addKids adds d to the child count of e's i-th member (writers).
func (f *Flash) addKids(e *fentry, i int, d int32) {
	if e.count() == 1 {
		m := e.one()
		m.kids = uint32(int32(m.kids) + d)
		e.setMem(oneWord(m))
		return
	}
	k := &f.arena[uint32(e.mem)+uint32(i)].kids
	*k = uint32(int32(*k) + d)
}

// block returns e's member block (n >= 2; writers).
func (f *Flash) block(e *fentry) []fmember {
	n, off := e.count(), uint32(e.mem)
	return f.arena[off : off+n : off+n]
}

// memberList returns a copy of e's members (checks and tests).
func (f *Flash) memberList(e *fentry) []fmember {
	switch e.count() {
	case 0:
		return nil
	case 1:
		return []fmember{e.one()}
	}
	return slices.Clone(f.block(e))
}

// Member blocks: an entry with n >= 2 members keeps them in a block of
// arena of 2^blockClass(n) slots (the class follows from n, so the entry
// stores only the offset), free blocks are kept per class and reused.
// One pointer-free slice instead of a slice per shared entry: no
// allocation per set, nothing for the GC to mark, and one load less
// per access (the entry points straight at its members; the slice
// header in a [][]fmember was a cache miss of its own).
// Measured (KVROUTER_BENCH_REQUESTS=0, BenchmarkReplay index=flash,
// -benchtime 5x, alternated with the build before): allocations per
// replay 373K -> 1.3K (the bytes are the tables'), phase=events the same
// (254, 255, 253 -> 256, 245, 253 ms), phase=lookups 42-47 -> 36-37 ms.
// Cost: an entry that grows leaves its smaller blocks on the free lists
// for other entries (no coalescing), so an index built without churn
// keeps them: BenchmarkBytesPerBlock shape=shared (every block held by
// all workers) 36 -> 44.5 heap bytes per block; the conversation trace
// 74 -> 71 (kvrouter-study bench index).
func blockClass(n uint32) int { return bits.Len32(n - 1) }

// allocBlock returns the offset of a free block of class c.
func (f *Flash) allocBlock(c int) uint32 {
	if c < len(f.freeB) {
		if l := f.freeB[c]; len(l) > 0 {
			f.freeB[c] = l[:len(l)-1]
			return l[len(l)-1]
		}
	}
	off := len(f.arena)
	old := cap(f.arena)
	f.arena = slices.Grow(f.arena, 1<<c)[:off+1<<c]
	if cap(f.arena) != old {
		f.publish() // a new array: lookups must see it before any set in it
	}
	return uint32(off)
}

func (f *Flash) freeBlock(off uint32, c int) {
	for c >= len(f.freeB) {
		f.freeB = append(f.freeB, nil)
	}
	f.freeB[c] = append(f.freeB[c], off)
}

// findMember returns the index of slot in ms (sorted by slot), or where
// it would go. A loop of its own: slices.BinarySearchFunc called its
// comparison through a function value at each step, ~300 instructions for
// the 64 members of a shared prefix's entry (a store's parent, a removal's).
func findMember(ms []fmember, slot uint32) (int, bool) {
	lo, hi := 0, len(ms)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if ms[mid].slot < slot {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < len(ms) && ms[lo].slot == slot
}

// find returns the index of slot in e's members.
func (f *Flash) find(e *fentry, slot uint32) (int, bool) {
	switch e.count() {
	case 0:
		return 0, false
	case 1:
		one := uint32(e.mem)
		if slot > one {
			return 1, false
		}
		return 0, one == slot
	}
	return findMember(f.block(e), slot)
}

// addMember inserts m (not yet a member) into e at sorted index i.
func (f *Flash) addMember(e *fentry, i int, m fmember) {
	n := e.count()
	switch n {
	case 0:
		e.setMem(oneWord(m))
		return
	case 1:
		off := f.allocBlock(1)
		b := f.arena[off : off+2]
		one := e.one()
		b[0], b[1] = one, m
		if i == 0 {
			b[0], b[1] = m, one
		}
		e.setMem(setWord(2, off, one.slot^m.slot))
		return
	}
	old := uint32(e.mem)
	if i == int(n) && blockClass(n+1) == blockClass(n) {
		// Appending within the block's room changes nothing a lookup
		// may be reading: the block's first n members stay, and the slot
		// after them is published by the new word. (A block only grows
		// in place: removal always moves the set to a new block, so a
		// slot past n was never visible in this block's life.)
		f.arena[old+n] = m
		e.setMem(f.setWordAfter(e, n+1, old, m.slot))
		return
	}
	off := f.allocBlock(blockClass(n + 1)) // may move arena: slice after
	src, dst := f.arena[old:old+n], f.arena[off:off+n+1]
	copy(dst, src[:i])
	dst[i] = m
	copy(dst[i+1:], src[i:])
	e.setMem(f.setWordAfter(e, n+1, off, m.slot))
	f.retireBlock(old, blockClass(n))
}

// delMember removes the member at index i of e.
func (f *Flash) delMember(e *fentry, i int) {
	n := e.count()
	switch n {
	case 1:
		e.setMem(0)
		return
	case 2:
		old := uint32(e.mem)
		e.setMem(oneWord(f.arena[old+1-uint32(i)]))
		f.retireBlock(old, 1)
		return
	}
	old := uint32(e.mem)
	off := f.allocBlock(blockClass(n - 1))
	src, dst := f.arena[old:old+n], f.arena[off:off+n-1]
	copy(dst, src[:i])
	copy(dst[i:], src[i+1:])
	e.setMem(f.setWordAfter(e, n-1, off, src[i].slot))
	f.retireBlock(old, blockClass(n))
}
