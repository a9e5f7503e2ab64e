package indexer_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/indexer"
	"github.com/kvrouter/kvrouter/indexer/indexertest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestFlashDropoutsMatchReference: lookups where workers drop out of the
// match at many depths, several at one depth, some on side branches,
// after evictions and clears that shrink sets again, equal the reference
// index's, at strides that put the drops in windows of every size. The
// fleet sizes cover a set losing its last members, worker slots that all
// fit the member sets' sums (64) and slots beyond them (1100 workers), a
// fleet whose first 1100 workers are then removed (every slot above the
// sums' bits), and the lookups of every prompt length.
func TestFlashDropoutsMatchReference(t *testing.T) {
	for _, tc := range []struct{ workers, removed int }{{5, 0}, {64, 0}, {1100, 0}, {1200, 1100}} {
		for _, stride := range []int{1, 3, 8, 64} {
			t.Run(fmt.Sprintf("workers=%d/removed=%d/stride=%d", tc.workers, tc.removed, stride), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(tc.workers), uint64(stride)))
				f := indexer.NewFlash(indexer.FlashConfig{Stride: stride})
				ref := indexertest.NewReference()
				apply := func(ev *kvevents.Event) {
					t.Helper()
					errF, errR := f.Apply(ev), ref.Apply(ev)
					if (errF == nil) != (errR == nil) {
						t.Fatalf("event %+v: flash %v, reference %v", ev, errF, errR)
					}
				}
				const blocks = 100
				prompt := make([]uint64, blocks)
				for i := range prompt {
					prompt[i] = rng.Uint64()
				}
				for w := range tc.workers {
					id := uint64(w + 1)
					// Depths cluster on 12 values, so several workers drop at
					// one position; some hold the whole prompt.
					depth := 1 + rng.IntN(12)*(blocks-1)/11
					ev := kvevents.Event{WorkerID: id, Kind: kvevents.KindStored}
					for i := range depth {
						ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(i + 1), Local: prompt[i]})
					}
					apply(&ev)
					if depth > 3 && rng.IntN(4) == 0 {
						br := kvevents.Event{WorkerID: id, Kind: kvevents.KindStored, HasParent: true, Parent: 3}
						br.Blocks = append(br.Blocks, kvevents.Block{Hash: 1 << 40, Local: rng.Uint64()})
						apply(&br)
					}
					switch x := rng.IntN(8); {
					case x == 0:
						apply(&kvevents.Event{WorkerID: id, Kind: kvevents.KindCleared})
					case x < 3:
						k := 1 + rng.IntN(depth)
						rm := kvevents.Event{WorkerID: id, Kind: kvevents.KindRemoved}
						for i := depth; i > depth-k; i-- {
							rm.Hashes = append(rm.Hashes, uint64(i))
						}
						apply(&rm)
					}
				}
				for w := range tc.removed {
					f.RemoveWorker(uint64(w + 1))
					ref.RemoveWorker(uint64(w + 1))
				}
				if err := f.Check(); err != nil {
					t.Fatal(err)
				}
				// Every length in the small fleets (every alignment of the
				// drops to the strides); a sample in the large ones, whose
				// reference walks are slow.
				for n := 1; n <= blocks; n += 1 + tc.workers/100 {
					got := indexertest.FormatOverlaps(f.FindMatches(prompt[:n]))
					if want := indexertest.FormatOverlaps(ref.FindMatches(prompt[:n])); got != want {
						t.Fatalf("first %d blocks:\nflash     %s\nreference %s", n, got, want)
					}
				}
			})
		}
	}
}
