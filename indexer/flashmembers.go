package indexer

import (
	"cmp"
	"math/bits"
	"slices"
	"unsafe"
)

// Flash's member sets: which worker slots hold an entry.

// members returns e's members, sorted by slot; the slice aliases the
// entry's storage (writes to kids stick) and is valid until the index
// changes.
func (f *Flash) members(e *fentry) []fmember {
	switch e.n {
	case 0:
		return nil
	case 1:
		return unsafe.Slice(&e.one, 1)
	}
	return f.arena[e.set : e.set+e.n : e.set+e.n]
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
// 74 -> 71 (kvrouter bench index).
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
	f.arena = slices.Grow(f.arena, 1<<c)[:off+1<<c]
	return uint32(off)
}

func (f *Flash) freeBlock(off uint32, c int) {
	for c >= len(f.freeB) {
		f.freeB = append(f.freeB, nil)
	}
	f.freeB[c] = append(f.freeB[c], off)
}

// moveBlock moves e's n members to a new block of class c, leaving index
// i empty (grow) or dropping the member at i (shrink), and frees the old
// block.
func (f *Flash) moveBlock(e *fentry, n uint32, c int, i int, grow bool) {
	off := f.allocBlock(c) // may move arena: slice after
	old := f.arena[e.set : e.set+n]
	nb := f.arena[off : off+1<<c]
	copy(nb, old[:i])
	if grow {
		copy(nb[i+1:], old[i:])
	} else {
		copy(nb[i:], old[i+1:])
	}
	f.freeBlock(e.set, blockClass(n))
	e.set = off
}

func (e *fentry) size() int {
	if e == nil {
		return 0
	}
	return int(e.n)
}

func findMember(ms []fmember, slot uint32) (int, bool) {
	return slices.BinarySearchFunc(ms, slot, func(m fmember, s uint32) int { return cmp.Compare(m.slot, s) })
}

// find returns the index of slot in e's members.
func (f *Flash) find(e *fentry, slot uint32) (int, bool) {
	if e.n == 1 {
		if slot > e.one.slot {
			return 1, false
		}
		return 0, e.one.slot == slot
	}
	return findMember(f.members(e), slot)
}

// addMember inserts m (not yet a member) into e at sorted index i.
func (f *Flash) addMember(e *fentry, i int, m fmember) {
	n := e.n
	switch {
	case n == 0:
		e.one = m
	case n == 1:
		off := f.allocBlock(1)
		b := f.arena[off : off+2]
		b[0], b[1] = e.one, m
		if i == 0 {
			b[0], b[1] = m, e.one
		}
		e.set, e.one = off, fmember{}
	case blockClass(n+1) == blockClass(n):
		b := f.arena[e.set : e.set+n+1]
		copy(b[i+1:], b[i:n])
		b[i] = m
	default:
		f.moveBlock(e, n, blockClass(n+1), i, true)
		f.arena[e.set+uint32(i)] = m
	}
	e.n++
}

// delMember removes the member at index i of e.
func (f *Flash) delMember(e *fentry, i int) {
	n := e.n
	switch {
	case n == 1:
		e.one = fmember{}
	case n == 2:
		e.one = f.arena[e.set+1-uint32(i)]
		f.freeBlock(e.set, 1)
		e.set = 0
	case blockClass(n-1) == blockClass(n):
		b := f.arena[e.set : e.set+n]
		copy(b[i:], b[i+1:])
	default:
		f.moveBlock(e, n, blockClass(n-1), i, false)
	}
	e.n--
}
