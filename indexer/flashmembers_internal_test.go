package indexer

import "testing"

// TestSetWordFields: a set word gives back its count, offset and sum at
// every size, a set of 2^20 members or more has no sum, and a set that
// shrinks below 2^20 has its sum computed from its block, one that grows
// past it drops it.
func TestSetWordFields(t *testing.T) {
	for _, n := range []uint32{2, 3, 1000, memNMask, memNMask + 1, 1 << 29} {
		w := setWord(n, 12345, 0x3a5)
		x, ok := memSum(w)
		if memN(w) != n || uint32(w) != 12345 || w&memOne != 0 || ok != (n <= memNMask) || ok && x != 0x3a5 {
			t.Errorf("n=%d: word %#x has n=%d offset %d sum %#x, %v", n, w, memN(w), uint32(w), x, ok)
		}
	}
	if x, ok := memSum(oneWord(fmember{slot: 0x7ff, kids: 9})); !ok || x != 0x3ff {
		t.Errorf("one member: sum %#x, %v", x, ok)
	}
	f := &Flash{arena: make([]fmember, memNMask+1)}
	for i := range f.arena {
		f.arena[i].slot = uint32(3*i + 1)
	}
	e := &fentry{mem: setWord(memNMask+1, 0, 0)}
	w := f.setWordAfter(e, memNMask, 0, f.arena[memNMask].slot)
	if x, ok := memSum(w); !ok || x != blockSum(f.arena[:memNMask]) || memN(w) != memNMask {
		t.Errorf("shrunk below 2^20: word %#x, sum %#x, %v, want %#x", w, x, ok, blockSum(f.arena[:memNMask]))
	}
	e.mem = w
	if w := f.setWordAfter(e, memNMask+1, 0, f.arena[memNMask].slot); w&memBig == 0 || memN(w) != memNMask+1 {
		t.Errorf("grown past 2^20: word %#x, n=%d", w, memN(w))
	}
}
