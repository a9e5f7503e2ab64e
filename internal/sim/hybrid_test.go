package sim

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/kvevents"
	"github.com/kvrouter/kvrouter/mocker"
)

// TestHybridOverPredicts: on hybrid engines whose second group is small,
// the kv policy (crediting full attention alone: the group events never
// reach its index) credits more blocks than the engines' joint hits
// deliver, by more than on full-attention engines; nothing is rejected
// and every request completes.
func TestHybridOverPredicts(t *testing.T) {
	recs := conversations(24, 5, 2*time.Second, 3)
	gap := map[mocker.HybridKind]int64{}
	for _, h := range []mocker.HybridConfig{
		{},
		{Kind: mocker.HybridSWA, GroupFraction: 0.2},
		{Kind: mocker.HybridMamba, StateInterval: 3, GroupFraction: 0.02},
	} {
		cfg := smallConfig(recs, 2)
		cfg.Engine.NumBlocks = 1200
		cfg.Engine.Hybrid = h
		cfg.Policies = []Policy{PolicyKV}
		rep, err := Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Policy(PolicyKV)
		rg := p.Regret
		if p.Completed != len(recs) || rg == nil || rep.Model != string(h.Kind) {
			t.Fatalf("%q: completed %d of %d, regret %v, model %q", h.Kind, p.Completed, len(recs), rg, rep.Model)
		}
		if rg.Actual != p.HitBlocks {
			t.Errorf("%q: regret actual %d blocks, report hit blocks %d", h.Kind, rg.Actual, p.HitBlocks)
		}
		gap[h.Kind] = rg.Chosen - rg.Actual
		t.Logf("%q: predicted %.4f actual %.4f (chosen %d actual %d)", h.Kind, rg.PredictedHitRate(), rg.ActualHitRate(), rg.Chosen, rg.Actual)
	}
	for _, k := range []mocker.HybridKind{mocker.HybridSWA, mocker.HybridMamba} {
		if gap[k] <= gap[mocker.HybridNone] {
			t.Errorf("%s over-predicts by %d blocks, full attention by %d: the joint hit does not show", k, gap[k], gap[mocker.HybridNone])
		}
	}
}

func TestRouterEventsDropsGroups(t *testing.T) {
	full := []kvevents.Event{{EventID: 0, Kind: kvevents.KindStored}, {EventID: 1, Kind: kvevents.KindRemoved}}
	if got := routerEvents(full); &got[0] != &full[0] || len(got) != 2 {
		t.Errorf("a model without groups: events copied or dropped: %v", got)
	}
	mixed := append(full, kvevents.Event{EventID: 2, Kind: kvevents.KindStored, Group: kvevents.Group{Index: 1, Kind: kvevents.GroupSliding, Window: 128}},
		kvevents.Event{EventID: 3, Kind: kvevents.KindRemoved, Group: kvevents.Group{Index: 1, Kind: kvevents.GroupState}})
	if got := routerEvents(mixed); len(got) != 2 || got[0].EventID != 0 || got[1].EventID != 1 {
		t.Errorf("group events reach the index: %v", got)
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
