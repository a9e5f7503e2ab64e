package indexer

import (
	"slices"
	"testing"
)

// TestPrefetchSlots: prefetching (an instruction on amd64, nothing
// elsewhere) reads homes at both ends of a table, and none at all for n
// = 0, and changes neither the table nor the homes.
func TestPrefetchSlots(t *testing.T) {
	tbl := make([]uint64, 1000)
	for i := range tbl {
		tbl[i] = uint64(i) * pidK1
	}
	want := slices.Clone(tbl)
	homes := []uint64{0, 999, 500, 1, 998}
	prefetchSlots(&tbl[0], &homes[0], len(homes))
	prefetchSlots(&tbl[0], &homes[0], 0)
	if !slices.Equal(tbl, want) || !slices.Equal(homes, []uint64{0, 999, 500, 1, 998}) {
		t.Fatal("prefetchSlots changed its arguments")
	}
}
