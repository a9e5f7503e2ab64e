package indexer_test

import (
	"fmt"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/kvhash"
)

// Two workers report cached blocks through KV events; a prompt's local
// block hashes are matched against the index: each worker's overlap is
// the number of leading blocks it holds.
func Example() {
	const blockSize = 4
	prompt := []uint32{10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33}
	locals := kvhash.LocalHashes(prompt, blockSize, kvhash.Seed("", ""))

	ix := indexer.NewRadix(indexer.DefaultRadixConfig())
	stored := func(worker uint64, n int) *kvevents.Event {
		ev := &kvevents.Event{WorkerID: worker, EventID: 1, Kind: kvevents.KindStored}
		for i, l := range locals[:n] {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(100*worker) + uint64(i), Local: l})
		}
		return ev
	}
	for _, ev := range []*kvevents.Event{stored(1, 3), stored(2, 1)} {
		if err := ix.Apply(ev); err != nil {
			fmt.Println(err)
		}
	}
	// The allocation-free form: reuse dst across lookups.
	var dst indexer.Overlaps
	dst = indexer.AppendMatches(ix, dst[:0], locals)
	for _, o := range dst {
		fmt.Printf("worker %d: %d of %d blocks\n", o.Worker.ID, o.Blocks, len(locals))
	}
	// Output:
	// worker 1: 3 of 3 blocks
	// worker 2: 1 of 3 blocks
}
