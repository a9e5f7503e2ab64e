package router

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// decodingScenario routes, on one worker at B=4 with the given features:
// a (2 blocks) at 0 ms with its first token at 50 ms, so a decodes from
// there; b (2000 tokens) at 500 ms; and c (1 block) at cAt. It returns
// the breakdown of c's candidate and the router's config.
func decodingScenario(t *testing.T, policy Policy, enable []string, cAt time.Duration) (Decision, Config) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Policy = policy
	cfg.BlockSize = 4
	cfg.EnableFeature = enable
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
	return route("c", []uint64{6}, 4, cAt), cfg
}

// TestPassArrivals: with FeaturePassArrivals the router hands the
// selector the moment each pending request came (loads.PassArrivals as
// selector.Candidate.PassQueue). a's first token dates a pass at 50 ms;
// a then decodes, in passes of DT(0.005) = 6.0094 ms from there. b's 2000
// tokens come at 500 ms (450 ms into the roll), inside the decode pass
// that began at 74 * DT = 444.70 ms and ends at 75 * DT = 450.71 ms. c,
// routed at 500.5 ms, sees that decode pass in flight (0.21 ms left) with
// b's 2000 tokens waiting behind it, as the engine has them. Without the
// feature the roll puts b in the pass after the first decode pass, long
// over, so nothing waits. A blind policy's candidates are predicted alike
// (the simulator's dumps compare them).
func TestPassArrivals(t *testing.T) {
	for _, tc := range []struct {
		policy Policy
		on     bool
	}{{PolicyKV, false}, {PolicyKV, true}, {PolicyRoundRobin, true}} {
		on := tc.on
		var enable []string
		if on {
			enable = []string{FeaturePassArrivals}
		}
		d, cfg := decodingScenario(t, tc.policy, enable, 500*time.Millisecond+500*time.Microsecond)
		cand := d.Candidates[0]
		dec := cfg.Selector.Timing.DecodeTime(5.0 / 1000)
		wantLeft, wantWaiting := 75*dec-450.5, 2000.0
		if !on {
			wantWaiting = 0
		}
		if math.Abs(cand.Waiting-wantWaiting) > 1e-9 || (on && math.Abs(cand.InFlight-wantLeft) > 1e-9) {
			t.Errorf("%v, pass-arrivals %v: inflight %.4f ms, waiting %.0f; want waiting %.0f (and inflight %.4f when on)",
				tc.policy, on, cand.InFlight, cand.Waiting, wantWaiting, wantLeft)
		}
	}
}

// TestEnableFeature: unknown feature names are refused naming the known
// ones; known ones resolve once each, in registry order, from lists and
// comma-separated items alike.
func TestEnableFeature(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EnableFeature = []string{"tail-guard", "delay-others"}
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), `"delay-others"`) || !strings.Contains(err.Error(), "pass-arrivals, tail-guard") {
		t.Fatalf("Validate = %v; want the unknown name and the known ones", err)
	}
	if _, err := New(cfg, Options{Rand: rand.New(rand.NewPCG(1, 2))}); err == nil {
		t.Fatal("New accepted an unknown feature")
	}
	on, err := EnabledFeatures([]string{"tail-guard, pass-arrivals", "tail-guard", ""})
	if err != nil || len(on) != 2 || on[0].Name != FeaturePassArrivals || on[1].Name != FeatureTailGuard {
		t.Fatalf("EnabledFeatures = %v, %v", on, err)
	}
	for _, f := range Features() {
		if f.Summary == "" {
			t.Errorf("feature %s has no summary", f.Name)
		}
	}
}
