package kvhash

import (
	"testing"
)

// TestPrefixIDs checks AppendPrefixIDs against the definition: id[0] =
// local[0], id[i] = B(id[i-1] ^ local[i]*K1), B(x) = y ^ y>>32 with y =
// x*K2, written out, and that siblings (one parent, locals differing in
// one bit) never share an id.
func TestPrefixIDs(t *testing.T) {
	locals := []uint64{1, 0, 0xffffffffffffffff, 42, 1 << 63, 0x0123456789abcdef}
	ids := AppendPrefixIDs([]uint64{5}, locals)
	if len(ids) != 1+len(locals) || ids[0] != 5 || ids[1] != locals[0] {
		t.Fatalf("ids %v", ids)
	}
	for i := 2; i < len(ids); i++ {
		y := (ids[i-1] ^ locals[i-1]*0x9e3779b97f4a7c15) * 0xbf58476d1ce4e5b9
		if want := y ^ y>>32; ids[i] != want {
			t.Fatalf("id %d = %#x, want %#x", i-1, ids[i], want)
		}
	}
	if got := AppendPrefixIDs(nil, nil); got != nil {
		t.Fatalf("no locals: %v", got)
	}
	seen := map[uint64]bool{}
	for b := range 64 {
		id := PrefixNext(ids[3], locals[2]^1<<b)
		if seen[id] || id == ids[4] {
			t.Fatalf("sibling with bit %d flipped collides", b)
		}
		seen[id] = true
	}
}
