package sim

import (
	"context"
	"testing"
	"time"

	"github.com/kvrouter/kvrouter/mocker"
	"github.com/kvrouter/kvrouter/router"
	"github.com/kvrouter/kvrouter/selector"
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

// TestPeerLinkFollowsEngine: the router prices hints over the engines'
// KV transfer link: the default engine's is selector.DefaultPeerLink, and
// on a link too slow to beat computing (10 MB/s) no hint is sent.
func TestPeerLinkFollowsEngine(t *testing.T) {
	def := DefaultConfig()
	if got := PeerLink(def.Engine, def.BlockSize); got != selector.DefaultPeerLink() {
		t.Fatalf("default engine link %+v, want %+v", got, selector.DefaultPeerLink())
	}
	cfg := smallConfig(conversations(16, 6, 500*time.Millisecond, 5), 4)
	cfg.Policies = []Policy{PolicyKV}
	cfg.Router.EnableFeature = []string{router.FeaturePeerKVHints}
	cfg.Engine.KVTransfer = mocker.Link{Bandwidth: 10e6, Latency: time.Millisecond}
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Policies[0]; p.PeerHints != 0 || p.PeerPulledBlocks != 0 {
		t.Fatalf("10 MB/s link: %d hints, %d pulled blocks, want none", p.PeerHints, p.PeerPulledBlocks)
	}
}
