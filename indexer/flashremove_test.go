package indexer_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/indexer/indexertest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestFlashRemoveAnyOrder: Removed events naming a random subset of a
// worker's branchy tree in random, leaf-first or root-first order, with
// duplicates and unknown hashes, leave Flash (which orders them by parent
// links and passes) exactly as the reference model: same dump, same
// blocks, same count of unknown hashes.
func TestFlashRemoveAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		flash, ref := indexer.NewFlash(indexer.FlashConfig{}), indexertest.NewReference()
		apply := func(ev *kvevents.Event) {
			e1, e2 := flash.Apply(ev), ref.Apply(ev)
			if (e1 == nil) != (e2 == nil) {
				t.Fatalf("round %d: %v vs %v", round, e1, e2)
			}
		}
		var held []uint64
		next := uint64(1)
		for w := range 3 {
			// A trunk and branches off random held blocks.
			for b := range 1 + rng.IntN(6) {
				ev := kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindStored}
				if b > 0 {
					ev.HasParent, ev.Parent = true, held[rng.IntN(len(held))]
				}
				for range 1 + rng.IntN(40) {
					ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: next, Local: 1 + rng.Uint64N(8)}) // few locals: siblings share them
					held = append(held, next)
					next++
				}
				apply(&ev)
			}
			var hs []uint64
			for _, h := range held {
				if rng.IntN(3) > 0 {
					hs = append(hs, h)
				}
			}
			switch rng.IntN(3) {
			case 0:
				rng.Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
			case 1:
				for i, j := 0, len(hs)-1; i < j; i, j = i+1, j-1 {
					hs[i], hs[j] = hs[j], hs[i]
				}
			}
			if len(hs) > 0 && rng.IntN(2) == 0 {
				hs = append(hs, hs[rng.IntN(len(hs))], 1<<50)
			}
			apply(&kvevents.Event{WorkerID: uint64(w), Kind: kvevents.KindRemoved, Hashes: hs})
			held = held[:0]
		}
		a, b := flash.Stats(), ref.Stats()
		if a.Blocks != b.Blocks || a.UnknownRemove != b.UnknownRemove {
			t.Fatalf("round %d: flash %+v, reference %+v", round, a, b)
		}
		if d1, d2 := flash.Dump(), ref.Dump(); !reflect.DeepEqual(d1, d2) {
			t.Fatalf("round %d: dumps differ:\n%v\n%v", round, d1, d2)
		}
		if err := flash.Check(); err != nil {
			t.Fatal(err)
		}
	}
}
