package indexer_test

import (
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// BenchmarkGroupsLookup: a 512-block prompt every one of 64 workers holds,
// through Flash alone, the overlay with no hybrid worker, and the overlay
// with half the workers hybrid (a 4096-token window of 64-token blocks:
// 64 blocks checked each).
func BenchmarkGroupsLookup(b *testing.B) {
	const workers, depth = 64, 512
	locals := make([]uint64, depth)
	blocks := make([]kvevents.Block, depth)
	for i := range locals {
		locals[i] = uint64(i + 1)
		blocks[i] = kvevents.Block{Hash: uint64(1000 + i), Local: locals[i]}
	}
	ids := kvhash.AppendPrefixIDs(nil, locals)
	for _, c := range []struct {
		name   string
		groups bool
		hybrid bool
	}{{"flash", false, false}, {"groups/hybrid=none", true, false}, {"groups/hybrid=half", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			var idx indexer.IDMatchAppender = indexer.NewFlash(indexer.FlashConfig{})
			var apply func(*kvevents.Event) error = idx.(*indexer.Flash).Apply
			if c.groups {
				g := indexer.NewGroups(idx.(*indexer.Flash), indexer.GroupsConfig{BlockSize: 64})
				idx, apply = g, g.Apply
			}
			for w := range uint64(workers) {
				ev := kvevents.Event{WorkerID: w + 1, Kind: kvevents.KindStored, Blocks: blocks}
				if err := apply(&ev); err != nil {
					b.Fatal(err)
				}
				if c.hybrid && w%2 == 0 {
					ev.Group = kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: 4096}
					if err := apply(&ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			dst := make(indexer.Overlaps, 0, workers)
			b.ReportAllocs()
			for b.Loop() {
				dst = idx.AppendMatchesIDs(dst[:0], locals, ids)
			}
			if len(dst) != workers || dst[0].Blocks != depth {
				b.Fatalf("%v", dst[:1])
			}
		})
	}
}
