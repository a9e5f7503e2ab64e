package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/selector"
)

// A caller's Request.Candidates buffer receives Decision.Candidates (stale
// contents cleared) and the decisions equal those of a twin router using
// its slab; a buffer too small for every rank is ignored.
func TestRequestCandidatesBuffer(t *testing.T) {
	build := func() *Router {
		cfg := DefaultConfig()
		cfg.BlockSize = 4
		r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(5, 6))})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := r.AddWorker(WorkerInfo{ID: uint64(i + 1), DPSize: 2, MaxNumBatchedTokens: 64}); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	slab, own := build(), build()
	toks := make([]uint32, 32)
	for i := range toks {
		toks[i] = uint32(i)
	}
	for _, r := range []*Router{slab, own} {
		if err := r.ApplyEvent(storedEvent(r, kvevents.Worker{ID: 2}, kvevents.TierDevice, toks[:16], "", "", 1)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]selector.Breakdown, 6)
	for i := range 50 {
		for j := range buf {
			buf[j] = selector.Breakdown{Cost: -1, Prob: 7, Passes: 9, Out: selector.Reason(3)}
		}
		id := fmt.Sprint("r", i)
		req := Request{ID: id, Tokens: toks[:4*(i%8+1)]}
		want, err := slab.Route(context.Background(), req, epoch)
		if err != nil {
			t.Fatal(err)
		}
		req.Candidates = buf
		if i%5 == 4 {
			req.Candidates = buf[:0:5] // too small: the slab
		}
		got, err := own.Route(context.Background(), req, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decision %d:\n got %+v\nwant %+v", i, got, want)
		}
		if inBuf := &got.Candidates[0] == &buf[0]; inBuf != (i%5 != 4) {
			t.Fatalf("decision %d: candidates in the caller's buffer: %v", i, inBuf)
		}
		if err := slab.Free(id, epoch); err != nil {
			t.Fatal(err)
		}
		if err := own.Free(id, epoch); err != nil {
			t.Fatal(err)
		}
	}
}
