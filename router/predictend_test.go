package router

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestPredictAtEndSameDecisions routes one random workload (prompts
// sharing prefixes, frees and failures from at once to well past the
// TTL, no KV events, so that predictions and active requests decide) on
// three routers: the default one, which records a booking in the
// predicted index when it ends; one that records it when it is routed
// (the previous behaviour); and one without the predicted index. The
// first two must take identical decisions, candidates' breakdowns
// included, and the third must differ somewhere (the workload depends on
// the predictions).
func TestPredictAtEndSameDecisions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	if !predictAtEnd(cfg) {
		t.Fatal("the default config should record predictions when bookings end")
	}
	noPredict := cfg
	noPredict.Predict.TTL = 0
	mk := func(c Config) *Router {
		r, err := New(c, Options{Rand: rand.New(rand.NewPCG(7, 7))})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 6 {
			if err := r.AddWorker(WorkerInfo{ID: uint64(i + 1), MaxNumBatchedTokens: 64}); err != nil {
				t.Fatal(err)
			}
		}
		return r
	}
	atEnd, atRoute, off := mk(cfg), mk(cfg), mk(noPredict)
	atRoute.predictAtEnd = false
	rng := rand.New(rand.NewPCG(1, 2))
	prompts := sharingPrompts(rng, 30)
	type act struct {
		id  string
		end time.Time
	}
	var active []act
	now := time.Unix(100, 0)
	ctx := context.Background()
	differ, recorded := false, false
	for i := range 3000 {
		now = now.Add(time.Duration(rng.IntN(40)) * time.Millisecond)
		// End the requests whose time came (some fail).
		k := 0
		for _, a := range active {
			if a.end.After(now) {
				active[k] = a
				k++
				continue
			}
			fail := rng.IntN(5) == 0
			for _, r := range []*Router{atEnd, atRoute, off} {
				var err error
				if fail {
					err = r.Fail(a.id, now)
				} else {
					err = r.Free(a.id, now)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		active = active[:k]
		recorded = recorded || atEnd.predict.Stats().Blocks > 0
		id := fmt.Sprint("r", i)
		req := Request{ID: id, Locals: prompts[rng.IntN(len(prompts))], OutputTokens: 16}
		d1, err1 := atEnd.Route(ctx, req, now)
		d2, err2 := atRoute.Route(ctx, req, now)
		d3, _ := off.Route(ctx, req, now)
		if err1 != nil || err2 != nil {
			t.Fatalf("request %d: %v / %v", i, err1, err2)
		}
		if !reflect.DeepEqual(d1, d2) {
			t.Fatalf("request %d: recorded at the end\n%+v\nrecorded when routed\n%+v", i, d1, d2)
		}
		differ = differ || d3.Worker != d1.Worker || d3.Overlap != d1.Overlap
		if rng.IntN(2) == 0 {
			for _, r := range []*Router{atEnd, atRoute, off} {
				if err := r.PrefillDone(id, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		// From at once to twice the TTL.
		dur := time.Duration(rng.IntN(int(2 * cfg.Predict.TTL)))
		active = append(active, act{id: id, end: now.Add(dur)})
	}
	if !differ {
		t.Fatal("no decision depends on the predicted index: the test shows nothing")
	}
	if !recorded {
		t.Fatal("no ended booking reached the predicted index")
	}
}

// sharingPrompts returns n random prompts (block hashes), about two in
// three starting with a prefix of an earlier one.
func sharingPrompts(rng *rand.Rand, n int) [][]uint64 {
	var prompts [][]uint64
	for p := range n {
		var l []uint64
		if p > 0 && rng.IntN(3) > 0 {
			o := prompts[rng.IntN(len(prompts))]
			l = append(l, o[:rng.IntN(len(o)+1)]...)
		}
		for len(l) < 2+rng.IntN(30) {
			l = append(l, rng.Uint64()|1)
		}
		prompts = append(prompts, l)
	}
	return prompts
}
