package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// Decisions own their Candidates although they are cut from shared slabs
// and the router reuses its scratch: later decisions, frees and worker
// changes never alter an earlier decision, and the caller's Locals are
// not written to.
func TestDecisionsDoNotShareMemory(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	cfg.Predict = PredictConfig{} // the last check reads event-fed overlap only
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(3, 4))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := r.AddWorker(WorkerInfo{ID: uint64(i + 1), DPSize: 2}); err != nil {
			t.Fatal(err)
		}
	}
	toks := make([]uint32, 32)
	for i := range toks {
		toks[i] = uint32(i)
	}
	if err := r.ApplyEvent(storedEvent(r, kvevents.Worker{ID: 2}, kvevents.TierDevice, toks[:16], "", "", 1)); err != nil {
		t.Fatal(err)
	}
	locals := []uint64{11, 12, 13}
	orig := slices.Clone(locals)
	type saved struct {
		d     Decision
		cands []selector.Breakdown
	}
	var all []saved
	for i := range 200 {
		req := Request{ID: fmt.Sprint("r", i), Tokens: toks[:4*(i%8+1)]}
		if i%3 == 0 {
			req.Tokens, req.Locals = nil, locals
		}
		d, err := r.Route(context.Background(), req, epoch)
		if err != nil {
			t.Fatal(err)
		}
		want := 6
		if i > 100 {
			want = 7
		}
		if len(d.Candidates) != want || cap(d.Candidates) != len(d.Candidates) {
			t.Fatalf("decision %d: %d candidates, cap %d", i, len(d.Candidates), cap(d.Candidates))
		}
		all = append(all, saved{d, slices.Clone(d.Candidates)})
		if i%2 == 1 {
			if err := r.Free(fmt.Sprint("r", i-1), epoch); err != nil {
				t.Fatal(err)
			}
		}
		if i == 100 {
			if err := r.AddWorker(WorkerInfo{ID: 9}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, s := range all {
		if !slices.Equal(s.d.Candidates, s.cands) {
			t.Fatalf("decision %d changed after later routing:\n%v\nwas\n%v", i, s.d.Candidates, s.cands)
		}
	}
	if !slices.Equal(locals, orig) {
		t.Errorf("caller's Locals changed to %v", locals)
	}
	// Device overlap of worker 2 is still read right after all the reuse.
	d, err := r.Route(context.Background(), Request{ID: "last", Tokens: toks, Constraints: pin(2)}, epoch)
	if err != nil {
		t.Fatal(err)
	}
	if d.Overlap[kvevents.TierDevice] != 4 || d.Blocks != 8 {
		t.Errorf("overlap %v of %d blocks, want 4 device blocks of 8", d.Overlap, d.Blocks)
	}
}
