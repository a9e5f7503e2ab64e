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
	differ, recorded := false, false
	routers := []*Router{atEnd, atRoute, off}
	end := func(r *Router, id string, fail bool, now time.Time) error {
		if fail {
			return r.Fail(id, now)
		}
		return r.Free(id, now)
	}
	before := func(time.Time) { recorded = recorded || atEnd.predict.Stats().Blocks > 0 }
	randomWorkload(t, rand.New(rand.NewPCG(1, 2)), routers, cfg.Predict.TTL, end, before, func(i int, ds []Decision, errs []error) {
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("request %d: %v / %v", i, errs[0], errs[1])
		}
		if !reflect.DeepEqual(ds[0], ds[1]) {
			t.Fatalf("request %d: recorded at the end\n%+v\nrecorded when routed\n%+v", i, ds[0], ds[1])
		}
		differ = differ || ds[2].Worker != ds[0].Worker || ds[2].Overlap != ds[0].Overlap
	})
	if !differ {
		t.Fatal("no decision depends on the predicted index: the test shows nothing")
	}
	if !recorded {
		t.Fatal("no ended booking reached the predicted index")
	}
}

// randomWorkload routes 3000 requests of one random workload on rs:
// 30 prompts sharing prefixes (sharingPrompts), arrivals 0-40 ms apart,
// each request ending from at once to twice ttl later (one in five a
// failure), ended on every router by end; half of them pass their
// prefill. before runs ahead of each request's routes; check gets every
// router's decision and error for request i.
func randomWorkload(t *testing.T, rng *rand.Rand, rs []*Router, ttl time.Duration,
	end func(r *Router, id string, fail bool, now time.Time) error,
	before func(now time.Time), check func(i int, ds []Decision, errs []error)) {
	t.Helper()
	prompts := sharingPrompts(rng, 30)
	type act struct {
		id  string
		end time.Time
	}
	var active []act
	now := time.Unix(100, 0)
	ctx := context.Background()
	ds, errs := make([]Decision, len(rs)), make([]error, len(rs))
	for i := range 3000 {
		now = now.Add(time.Duration(rng.IntN(40)) * time.Millisecond)
		k := 0
		for _, a := range active {
			if a.end.After(now) {
				active[k] = a
				k++
				continue
			}
			fail := rng.IntN(5) == 0
			for _, r := range rs {
				if err := end(r, a.id, fail, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		active = active[:k]
		before(now)
		id := fmt.Sprint("r", i)
		req := Request{ID: id, Locals: prompts[rng.IntN(len(prompts))], OutputTokens: 16}
		for j, r := range rs {
			ds[j], errs[j] = r.Route(ctx, req, now)
		}
		check(i, ds, errs)
		if rng.IntN(2) == 0 {
			for _, r := range rs {
				if err := r.PrefillDone(id, now); err != nil {
					t.Fatal(err)
				}
			}
		}
		active = append(active, act{id: id, end: now.Add(time.Duration(rng.IntN(int(2 * ttl))))})
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
