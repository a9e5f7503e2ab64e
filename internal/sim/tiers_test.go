package sim

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
)

// A device pool too small for the conversations' histories: the host tier
// keeps what G1 evicts, so the hit rate rises (hits now come from the
// host tier too), prefill computed falls, and the per-tier hit rates add up
// to the hit rate. With G4 on, runs stay deterministic (one store per
// policy's fleet, even when policies run in parallel).
func TestTiersRaiseHitRate(t *testing.T) {
	recs := conversations(12, 6, 2*time.Second, 5)
	base := smallConfig(recs, 2)
	base.Engine.NumBlocks = 300
	base.Policies = []Policy{PolicyKV, PolicyRoundRobin}
	run := func(c Config) Report {
		rep, err := Run(context.Background(), c, nil)
		if err != nil {
			t.Fatal(err)
		}
		clearWall(&rep)
		return rep
	}
	g1 := run(base)
	tiered := base
	tiered.Tiers = mocker.TierSizes{Host: mocker.TierSize{Mult: 4}, Disk: mocker.TierSize{Mult: 16}, Shared: mocker.TierSize{Mult: 8}}
	tiered.Parallel = 1
	a := run(tiered)
	tiered.Parallel = 2
	if b := run(tiered); !reflect.DeepEqual(a, b) {
		t.Fatal("tiered run not deterministic across parallelism")
	}
	for _, p := range []Policy{PolicyKV, PolicyRoundRobin} {
		x, y := g1.Policy(p), a.Policy(p)
		if y.HitRate <= x.HitRate || y.ComputedTokens >= x.ComputedTokens {
			t.Errorf("%s: hit rate %.3f -> %.3f, computed %d -> %d with tiers", p, x.HitRate, y.HitRate, x.ComputedTokens, y.ComputedTokens)
		}
		if x.TierHitRate != nil {
			t.Errorf("%s: tier_hit_rate without tiers", p)
		}
		sum := 0.0
		for _, v := range y.TierHitRate {
			sum += v
		}
		if math.Abs(sum-y.HitRate) > 1e-9 || y.TierHitRate["host"] == 0 {
			t.Errorf("%s: tier hit rates %v sum to %.4f, hit rate %.4f", p, y.TierHitRate, sum, y.HitRate)
		}
		if y.Completed != len(recs) {
			t.Errorf("%s: completed %d of %d", p, y.Completed, len(recs))
		}
	}
}
