package sim

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// TestDisagg runs a 2:2 fleet under every conditional policy: every request
// completes, deterministically; always disaggregates every request, and
// the decode workers pull the prompt blocks the prefill workers computed
// (what they did not hold); isl with a threshold above every prompt runs
// them all aggregated, on the decode pool only.
func TestDisagg(t *testing.T) {
	recs := conversations(8, 4, 2*time.Second, 3)
	cfg := smallConfig(recs, 4)
	cfg.Policies = []Policy{PolicyKV}
	cfg.Disagg = DisaggConfig{Pools: router.Pools{Prefill: 2, Decode: 2}, Policies: []router.DisaggPolicy{router.DisaggAlways, router.DisaggISL}}
	cfg.Router.Disagg.ISLThreshold = 1 << 20
	run := func() Report {
		rep, err := Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		clearWall(&rep)
		return rep
	}
	rep := run()
	if again := run(); !reflect.DeepEqual(rep, again) {
		t.Fatal("same config, different reports")
	}
	if len(rep.Policies) != 2 || rep.Policies[0].Policy != "kv+always" || rep.Policies[1].Policy != "kv+isl" {
		t.Fatalf("rows %+v", rep.Policies)
	}
	always, isl := rep.Policies[0], rep.Policies[1]
	for _, p := range []PolicyReport{always, isl} {
		if p.Completed != len(recs) || p.Rejected != 0 {
			t.Fatalf("%s: completed %d rejected %d of %d", p.Policy, p.Completed, p.Rejected, len(recs))
		}
	}
	d := always.Disagg
	if d.Disaggregated != len(recs) || d.Aggregated != 0 || d.PrefillHop.P50 <= 0 || d.DecodeHop.P50 <= 0 ||
		d.Transfer.P50 <= 0 || d.Transfer.P50 > d.DecodeHop.P50 {
		t.Fatalf("always: %+v", d)
	}
	if d.TransferredBlocks <= 0 || d.TransferredBlocks > always.Blocks {
		t.Fatalf("always: transferred %d of %d prompt blocks", d.TransferredBlocks, always.Blocks)
	}
	// Each request ran one hop in each pool.
	if p, dc := always.Workers[0].Requests+always.Workers[1].Requests, always.Workers[2].Requests+always.Workers[3].Requests; p != len(recs) || dc != len(recs) {
		t.Fatalf("always: prefill pool ran %d, decode pool %d of %d", p, dc, len(recs))
	}
	if d := isl.Disagg; d.Disaggregated != 0 || d.Aggregated != len(recs) || d.TransferredBlocks != 0 {
		t.Fatalf("isl: %+v", d)
	}
	for w := range 2 {
		if n := isl.Workers[w].Requests; n != 0 {
			t.Fatalf("isl: prefill worker %d ran %d aggregated requests", w, n)
		}
	}
}

// Pools that do not sum to the fleet's workers fail validation.
func TestDisaggPoolsValidate(t *testing.T) {
	cfg := smallConfig(conversations(1, 1, time.Second, 1), 4)
	cfg.Disagg = DisaggConfig{Pools: router.Pools{Prefill: 1, Decode: 2}}
	if cfg.Validate() == nil {
		t.Fatal("1:2 on 4 workers validated")
	}
}
