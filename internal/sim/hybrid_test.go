package sim

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/trace"
)

// hybridRun runs kv and kv-full-only on 2 engines of model h.
func hybridRun(t *testing.T, recs []trace.Record, h mocker.HybridConfig, eventDelay time.Duration) (kv, full *PolicyReport) {
	t.Helper()
	cfg := smallConfig(recs, 2)
	cfg.Engine.NumBlocks = 1200
	cfg.Engine.Hybrid = h
	cfg.EventDelay = eventDelay
	cfg.Policies = []Policy{PolicyKV, PolicyKVFullOnly}
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	kv, full = rep.Policy(PolicyKV), rep.Policy(PolicyKVFullOnly)
	for _, p := range []*PolicyReport{kv, full} {
		rg := p.Regret
		if p.Completed != len(recs) || rg == nil || rep.Model != string(h.Kind) {
			t.Fatalf("%q %s: completed %d of %d, regret %v, model %q", h.Kind, p.Policy, p.Completed, len(recs), rg, rep.Model)
		}
		if rg.Actual != p.HitBlocks {
			t.Errorf("%q %s: regret actual %d blocks, report hit blocks %d", h.Kind, p.Policy, rg.Actual, p.HitBlocks)
		}
		t.Logf("%q %s: predicted %.4f actual %.4f (chosen %d actual %d, lost %v) TTFT p50 %.1f ms p99 %.1f ms",
			h.Kind, p.Policy, rg.PredictedHitRate(), rg.ActualHitRate(), rg.Chosen, rg.Actual, rg.Lost, p.TTFT.P50, p.TTFT.P99)
	}
	return kv, full
}

var (
	smallSWA   = mocker.HybridConfig{Kind: mocker.HybridSWA, GroupFraction: 0.2}
	smallMamba = mocker.HybridConfig{Kind: mocker.HybridMamba, StateInterval: 3, GroupFraction: 0.02}
)

// TestHybridJointPredictsExactly: with few requests in flight (nothing
// evicted between a decision and its admission) and events applied at
// the end of their pass, kv (crediting the joint match: the group
// overlay) predicts exactly the blocks the engines hit, while
// kv-full-only (crediting full attention alone) over-predicts.
func TestHybridJointPredictsExactly(t *testing.T) {
	kv, full := hybridRun(t, conversations(4, 5, 4*time.Second, 3), smallMamba, 0)
	if kv.Regret.Chosen != kv.Regret.Actual {
		t.Errorf("kv predicted %d blocks, the engines hit %d", kv.Regret.Chosen, kv.Regret.Actual)
	}
	if full.Regret.Chosen <= full.Regret.Actual {
		t.Errorf("kv-full-only predicted %d blocks, the engines hit %d: no over-prediction", full.Regret.Chosen, full.Regret.Actual)
	}
}

// TestHybridJointPredicts: on busy hybrid engines whose second group is
// small, kv over-predicts only by the blocks the engines evicted between
// decision and admission (a few percent), kv-full-only by several times
// that; kv's TTFT p50 is not worse.
func TestHybridJointPredicts(t *testing.T) {
	recs := conversations(24, 5, 2*time.Second, 3)
	for _, h := range []mocker.HybridConfig{smallSWA, smallMamba} {
		kv, full := hybridRun(t, recs, h, DefaultEventDelay)
		kvGap, fullGap := kv.Regret.Chosen-kv.Regret.Actual, full.Regret.Chosen-full.Regret.Actual
		if stale := kv.Regret.Lost["stale"]; stale*100 > kv.Regret.Chosen {
			t.Errorf("%s: kv lost %d of %d credited blocks with no eviction in between", h.Kind, stale, kv.Regret.Chosen)
		}
		if fullGap <= 2*max(kvGap, 1) {
			t.Errorf("%s: kv-full-only over-predicts by %d blocks, kv by %d: the joint rule does not show", h.Kind, fullGap, kvGap)
		}
		if kv.TTFT.P50 > full.TTFT.P50 {
			t.Errorf("%s: kv TTFT p50 %.1f ms, kv-full-only %.1f ms", h.Kind, kv.TTFT.P50, full.TTFT.P50)
		}
	}
}

// TestKVFullOnlyIsKVWithoutGroups: on a model without groups kv-full-only
// decides exactly as kv (same stream, same index): identical reports.
func TestKVFullOnlyIsKVWithoutGroups(t *testing.T) {
	kv, full := hybridRun(t, conversations(12, 4, 2*time.Second, 5), mocker.HybridConfig{}, DefaultEventDelay)
	a, b := *kv, *full
	a.Policy, b.Policy, a.WallS, b.WallS = "", "", 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Errorf("kv and kv-full-only differ without groups:\n%+v\n%+v", a, b)
	}
}

func TestWithHybridBaseline(t *testing.T) {
	for _, c := range []struct{ in, want []Policy }{
		{AllPolicies, append([]Policy{PolicyKV, PolicyKVFullOnly}, AllPolicies[1:]...)},
		{[]Policy{PolicyLoad}, []Policy{PolicyLoad}},
		{[]Policy{PolicyKVFullOnly, PolicyKV}, []Policy{PolicyKVFullOnly, PolicyKV}},
	} {
		in := slices.Clone(c.in)
		if got := WithHybridBaseline(in); !slices.Equal(got, c.want) || !slices.Equal(in, c.in) {
			t.Errorf("WithHybridBaseline(%v) = %v (input now %v), want %v", c.in, got, in, c.want)
		}
	}
	if p, err := ParsePolicy(" kv-full-only "); err != nil || p != PolicyKVFullOnly {
		t.Errorf("ParsePolicy: %q, %v", p, err)
	}
}

func TestHybridValidate(t *testing.T) {
	cfg := smallConfig(conversations(2, 2, time.Second, 1), 2)
	cfg.Engine.Hybrid.Kind = mocker.HybridSWA
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := cfg
	c.Tiers.Host.Mult = 4
	if c.Validate() == nil {
		t.Error("hybrid with tiers accepted")
	}
	c = cfg
	c.Router.EnableFeature = []string{"peer-kv-hints"}
	if c.Validate() == nil {
		t.Error("hybrid with peer-KV hints accepted")
	}
}
