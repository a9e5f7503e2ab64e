package router

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/kvrouter/kvrouter/selector"
)

// A worker's own timing model prices it in the time cost: with two idle,
// cache-less workers, the one set 4x slower than the prior is never
// chosen, its prefill term is 4x the other's, and clearing the model ties
// them again.
func TestSetWorkerTiming(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []uint64{1, 2} {
		if err := r.AddWorker(WorkerInfo{ID: id, MaxNumBatchedTokens: 8192, TotalKVBlocks: 1000, BlockSize: 4}); err != nil {
			t.Fatal(err)
		}
	}
	slow := selector.DefaultTiming()
	for _, c := range []*float64{&slow.PrefillQuad, &slow.PrefillLin, &slow.PrefillConst, &slow.DecodeQuad, &slow.DecodeLin, &slow.DecodeConst} {
		*c *= 4
	}
	if err := r.SetWorkerTiming(1, slow); err != nil {
		t.Fatal(err)
	}
	// AddWorker updating worker 1 keeps its model.
	if err := r.AddWorker(WorkerInfo{ID: 1, MaxNumBatchedTokens: 8192, TotalKVBlocks: 1000, BlockSize: 4}); err != nil {
		t.Fatal(err)
	}
	if got, ok := r.WorkerTiming(1); !ok || got != slow {
		t.Fatalf("WorkerTiming(1) = %+v, %v", got, ok)
	}
	if _, ok := r.WorkerTiming(2); ok {
		t.Fatal("worker 2 has a model it was never given")
	}
	picks := map[uint64]int{}
	n := uint32(0)
	route := func(id string) Decision {
		t.Helper()
		// A new first token each time: no prefix shared with earlier
		// requests, in the event index or the predicted one.
		tokens := make([]uint32, 400)
		n++
		tokens[0] = n
		d, err := r.Route(context.Background(), Request{ID: id, Tokens: tokens}, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Free(id, epoch); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := range 20 {
		d := route(string(rune('a' + i)))
		picks[d.Worker.ID]++
		if i == 0 {
			p1, p2 := d.Candidates[0].Prefill, d.Candidates[1].Prefill
			if p1 < 3.99*p2 || p1 > 4.01*p2 {
				t.Fatalf("prefill terms w1 %v, w2 %v: want w1 = 4 x w2", p1, p2)
			}
		}
	}
	if picks[1] != 0 {
		t.Fatalf("picks %v: the 4x slower worker was chosen", picks)
	}
	if err := r.SetWorkerTiming(1, selector.Timing{}); err != nil {
		t.Fatal(err)
	}
	d := route("cleared")
	if d.Candidates[0].Cost != d.Candidates[1].Cost {
		t.Fatalf("after clearing, costs %v and %v differ", d.Candidates[0].Cost, d.Candidates[1].Cost)
	}
	if err := r.SetWorkerTiming(9, slow); !errors.Is(err, ErrUnknownWorker) {
		t.Fatalf("unknown worker: err %v", err)
	}
	bad := slow
	bad.PrefillLin = -1
	if err := r.SetWorkerTiming(1, bad); !errors.Is(err, ErrBadWorker) {
		t.Fatalf("negative coefficient: err %v", err)
	}
}
