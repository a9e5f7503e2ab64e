package router

import (
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestTierChainsParentZero: with the cross-tier view on, a lower-tier
// root block whose publisher sent parent 0 (for none) is placed in the
// derived index like a root (before, it waited forever for a parent 0).
func TestTierChainsParentZero(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	cfg.TierChains = true
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddWorker(WorkerInfo{ID: 1}); err != nil {
		t.Fatal(err)
	}
	ev := kvevents.Event{WorkerID: 1, Kind: kvevents.KindStored, Tier: kvevents.TierHostPinned, HasParent: true, Parent: 0,
		Blocks: []kvevents.Block{{Hash: 11, Local: 101}, {Hash: 12, Local: 102}}}
	if err := r.ApplyEvent(&ev); err != nil {
		t.Fatal(err)
	}
	if got := r.Index(kvevents.TierHostPinned).FindMatches([]uint64{101, 102}).Get(kvevents.Worker{ID: 1}); got != 2 {
		t.Fatalf("host_pinned overlap %d, want 2", got)
	}
}
