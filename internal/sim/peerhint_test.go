package sim

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/router"
)

// TestPeerKVHints: the same conversations with and without the feature.
// With it, some decisions carry a hint, their engines pull the hinted
// blocks over the KV link instead of computing them, and the fleet
// computes fewer prompt tokens; without it nothing is pulled.
func TestPeerKVHints(t *testing.T) {
	recs := conversations(16, 6, 500*time.Millisecond, 5)
	run := func(enable []string) PolicyReport {
		cfg := smallConfig(recs, 4)
		cfg.Policies = []Policy{PolicyKV}
		cfg.Router.EnableFeature = enable
		rep, err := Run(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := rep.Policies[0]
		if p.Completed != len(recs) {
			t.Fatalf("%v: completed %d of %d", enable, p.Completed, len(recs))
		}
		return p
	}
	off := run(nil)
	on := run([]string{router.FeaturePeerKVHints})
	if off.PeerHints != 0 || off.PeerPulledBlocks != 0 {
		t.Fatalf("off: %d hints, %d pulled", off.PeerHints, off.PeerPulledBlocks)
	}
	if on.PeerHints == 0 || on.PeerPulledBlocks == 0 {
		t.Fatalf("on: %d hints, %d pulled", on.PeerHints, on.PeerPulledBlocks)
	}
	if on.ComputedTokens >= off.ComputedTokens {
		t.Fatalf("computed tokens: %d with hints, %d without", on.ComputedTokens, off.ComputedTokens)
	}
	t.Logf("hints %d pulled %d; computed %d -> %d", on.PeerHints, on.PeerPulledBlocks, off.ComputedTokens, on.ComputedTokens)
}
