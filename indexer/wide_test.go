package indexer_test

import (
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/indexer/indexertest"
	"github.com/kvrouter/kvrouter/kvevents"
)

// TestWideFleet: hundreds of workers on one prompt, dropping out at random
// depths (some at the same depth, some alone), then some evictions. It
// covers what the small differential alphabets do not: lookups whose first
// block has more holders than FindMatches' stack scratch, and both
// drop-marking paths (many and few workers lost at one depth).
func TestWideFleet(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const workers, depth = 300, 48
	prompt := make([]uint64, depth)
	for i := range prompt {
		prompt[i] = rng.Uint64()
	}
	var evs []kvevents.Event
	for w := range workers {
		n := depth
		switch rng.IntN(3) {
		case 0:
			n = 1 + rng.IntN(depth)
		case 1:
			n = []int{10, 30}[rng.IntN(2)]
		}
		ev := kvevents.Event{WorkerID: uint64(w + 1), DPRank: uint32(rng.IntN(2)), Kind: kvevents.KindStored}
		for i := range n {
			ev.Blocks = append(ev.Blocks, kvevents.Block{Hash: uint64(i + 1), Local: prompt[i]})
		}
		evs = append(evs, ev)
		if rng.IntN(4) == 0 {
			evs = append(evs, kvevents.Event{WorkerID: ev.WorkerID, DPRank: ev.DPRank, Kind: kvevents.KindRemoved,
				Hashes: []uint64{uint64(1 + rng.IntN(n))}})
		}
	}
	// Workers registered out of order too: slot order != worker order.
	rng.Shuffle(len(evs)/2, func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	ref := indexertest.NewReference()
	for i := range evs {
		_ = ref.Apply(&evs[i]) // removes may precede their store after the shuffle: same outcome everywhere
	}
	for _, impl := range ours {
		idx := impl.new()
		for i := range evs {
			_ = idx.Apply(&evs[i])
		}
		for q := 1; q <= depth; q += 7 {
			want := indexertest.FormatOverlaps(ref.FindMatches(prompt[:q]))
			if got := indexertest.FormatOverlaps(idx.FindMatches(prompt[:q])); got != want {
				t.Fatalf("%s: query of %d blocks:\n got %s\nwant %s", impl.name, q, got, want)
			}
		}
	}
}
