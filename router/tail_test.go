package router

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/selector"
)

// TestTailEstimate: with FeatureTailGuard the router passes each
// decision the tail estimate of the decisions before it and feeds the
// estimate the fastest prediction among the scored candidates; off, it
// keeps none.
func TestTailEstimate(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.BlockSize = 4
		if on {
			cfg.EnableFeature = []string{FeatureTailGuard}
		}
		r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
		if err != nil {
			t.Fatal(err)
		}
		for id := uint64(1); id <= 2; id++ {
			if err := r.AddWorker(WorkerInfo{ID: id, MaxNumBatchedTokens: 8192, TotalKVBlocks: 1000, BlockSize: 4}); err != nil {
				t.Fatal(err)
			}
		}
		t0 := time.Unix(1_700_000_000, 0)
		var want selector.TailTracker
		isls := []int{4000, 8, 1200, 6000, 40, 2400}
		for i, isl := range isls {
			locals := []uint64{uint64(100 + i)}
			d, err := r.Route(context.Background(), Request{ID: string(rune('a' + i)), Locals: locals, ISL: isl}, t0.Add(time.Duration(i)*3*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if !on {
				if r.sreq.TailTTFT != 0 || r.tail[0].Value() != 0 {
					t.Fatalf("off: request %d passed tail %v, estimate %v; want none", i, r.sreq.TailTTFT, r.tail[0].Value())
				}
				continue
			}
			if r.sreq.TailTTFT != want.Value() {
				t.Errorf("request %d passed tail %v, want %v (the estimate before it)", i, r.sreq.TailTTFT, want.Value())
			}
			best := d.Candidates[0].Prefill + d.Candidates[0].Decode
			for _, c := range d.Candidates[1:] {
				best = min(best, c.Prefill+c.Decode)
			}
			if i > 0 && best <= 0 {
				t.Fatalf("request %d: fastest prediction %v", i, best)
			}
			want.Observe(best, selector.TailQuantile)
			if r.tail[0].Value() != want.Value() {
				t.Errorf("after request %d the estimate is %v, want %v", i, r.tail[0].Value(), want.Value())
			}
		}
		if on && want.Value() == 0 {
			t.Fatal("no estimate formed")
		}
	}
}
