package router

import (
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
)

// TestDumpTiersWhileApplying: with the cross-tier view, DumpTiers (a
// snapshot, GET /debug/index) runs while a worker's lower-tier events are
// applied (ApplyEvent may run concurrently with other calls); under -race
// this catches reads of a worker's view that race with its writer.
func TestDumpTiersWhileApplying(t *testing.T) {
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
	const n = 300
	done := make(chan struct{})
	go func() {
		defer close(done)
		parent := uint64(0)
		for i := uint64(1); i <= n; i++ {
			ev := kvevents.Event{WorkerID: 1, EventID: i, Kind: kvevents.KindStored, Tier: kvevents.TierHostPinned,
				HasParent: parent != 0, Parent: parent, Blocks: []kvevents.Block{{Hash: 1000 + i, Local: i}}}
			if err := r.ApplyEvent(&ev); err != nil {
				t.Error(err)
				return
			}
			parent = 1000 + i
		}
	}()
	for {
		select {
		case <-done:
			// Every host block, one Stored each (no device blocks).
			if got := len(r.DumpTiers()); got != n {
				t.Fatalf("DumpTiers: %d events, want %d", got, n)
			}
			return
		default:
			_ = r.DumpTiers()
		}
	}
}
