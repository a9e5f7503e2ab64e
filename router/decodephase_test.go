package router

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/selector"
)

// decodingScenario routes, on one worker at B=4 with the selector cfg
// sets: a (2 blocks) at 0 ms with its first token at 50 ms, so a decodes
// from there; b (2000 tokens) at 500 ms; and c (1 block) at cAt. It
// returns the breakdown of c's candidate.
func decodingScenario(t *testing.T, set func(*selector.Config), cAt time.Duration) (selector.Breakdown, selector.Config) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BlockSize = 4
	set(&cfg.Selector)
	r, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.AddWorker(WorkerInfo{ID: 1, MaxNumBatchedTokens: 8192, TotalKVBlocks: 1000, BlockSize: 4}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	route := func(id string, locals []uint64, isl int, at time.Duration) Decision {
		t.Helper()
		d, err := r.Route(context.Background(), Request{ID: id, Locals: locals, ISL: isl}, t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	route("a", []uint64{1, 2}, 8, 0)
	if err := r.PrefillDone("a", t0.Add(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	route("b", []uint64{3, 4, 5}, 2000, 500*time.Millisecond) // a decodes: b's prefill came at 500 ms
	return route("c", []uint64{6}, 4, cAt).Candidates[0], cfg.Selector
}

// checkPass compares c's view of the pass in flight with the wanted one:
// the waiting tokens always, the time left only when the knob is on.
func checkPass(t *testing.T, knob string, on bool, cand selector.Breakdown, wantLeft, wantWaiting float64) {
	t.Helper()
	if !on {
		wantWaiting = 0
	}
	if math.Abs(cand.Waiting-wantWaiting) > 1e-9 || (on && math.Abs(cand.InFlight-wantLeft) > 1e-9) {
		t.Errorf("%s %v: inflight %.4f ms, waiting %.0f; want waiting %.0f (and inflight %.4f when on)", knob, on, cand.InFlight, cand.Waiting, wantWaiting, wantLeft)
	}
}

// TestDecodePhase: prefill routed to a rank whose requests all decode
// reaches the selector as PassArrived (loads.Pass.Arrived). With
// selector.Config.DecodePhase the next request waits out half a decode
// pass (less the 2 ms since) and shares a pass with that prefill; without
// it the passes roll from the last first token, 450 ms earlier, which
// puts that prefill in a pass long over, so nothing waits.
func TestDecodePhase(t *testing.T) {
	for _, on := range []bool{false, true} {
		cand, sc := decodingScenario(t, func(c *selector.Config) { c.DecodePhase = on }, 502*time.Millisecond)
		// a decodes alone, at the KV usage of the rank's blocks (a's 2,
		// b's 3 of 1000): decode passes of DT(0.005) = 6.01 ms.
		dec := sc.Timing.DecodeTime(5.0 / 1000)
		checkPass(t, "DecodePhase", on, cand, dec/2-2, 2000)
	}
}
